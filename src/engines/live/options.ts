import { filterStepsPerEvent } from "~/lib/filter/evaluate.ts";
import { SendBudget } from "./send-budget.ts";

export type LiveHubOptions = {
  /** Recent events kept per channel for late viewers. */
  historySize: number;
  historyBytes: number;
  /** Across all channels; the idle channels' histories that were written longest ago go first. */
  totalHistoryBytes: number;
  /** Events waiting per subscriber; beyond it the oldest are dropped and counted. */
  queueLimit: number;
  /** A subscriber whose socket holds more than this unsent is not sent more until it drains. */
  maxBufferedBytes: number;
  /**
   * Events are coalesced for this long before a send (a full batch goes at once). 0: until the end of the
   * current event-loop turn, so what one publisher message brought goes out as one message per subscriber.
   */
  flushIntervalMs: number;
  maxBatch: number;
  /** Bytes of events in one message (at least one event): a send never adds more than this to a socket's buffer. */
  maxBatchBytes: number;
  /** Viewers of one namespace or link at once: a link is public, so its audience is bounded. */
  maxSubscribersPerChannel: number;
  /**
   * Filter steps (FilterMeter) one viewer's filters may spend on one event. A new event that needs more is
   * dropped for that viewer (and reported); a retained one met while applying a new config refuses the config.
   */
  filterStepsPerEvent: number;
  /**
   * Filter steps per second one distinct filter set may spend on new events, and the most it may spend at once
   * (what one publisher message may cost it).
   */
  filterStepsPerSecond: number;
  filterBurstSteps: number;
  /**
   * The same for all filter sets of one namespace or link together, shared out equally (a filter set gets the
   * lesser of its own bound and its share): many viewers cannot hold the event loop, nor costly ones starve the rest.
   */
  channelFilterStepsPerSecond: number;
  channelFilterBurstSteps: number;
  /** Filter steps a new config may spend re-reading the retained history before it is refused. */
  filterHistorySteps: number;
  /** History re-reads, all viewers together, take at most this many steps per event-loop turn before yielding. */
  filterSliceSteps: number;
};

export const defaultLiveHubOptions: LiveHubOptions = {
  historySize: 1000,
  historyBytes: 16 * 1024 * 1024,
  totalHistoryBytes: 256 * 1024 * 1024,
  queueLimit: 5000,
  maxBufferedBytes: 4 * 1024 * 1024,
  flushIntervalMs: 0,
  maxBatch: 500,
  maxBatchBytes: 1024 * 1024,
  maxSubscribersPerChannel: 1000,
  filterStepsPerEvent,
  filterStepsPerSecond: 2_500_000,
  filterBurstSteps: 250_000,
  channelFilterStepsPerSecond: 10_000_000,
  channelFilterBurstSteps: 500_000,
  filterHistorySteps: 10_000_000,
  filterSliceSteps: 200_000,
};

/** A send budget from the hub's options: a history message and a socket's worth of batches per viewer. */
export function defaultSendBudget(options: LiveHubOptions, totalBytes = 128 * 1024 * 1024): SendBudget {
  return new SendBudget({
    totalBytes,
    perViewerBytes: options.historyBytes + options.maxBufferedBytes + options.maxBatchBytes,
    keepingUpBytes: options.maxBatchBytes / 4,
  });
}
