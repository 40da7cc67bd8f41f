import { type EventPredicate, type FilterMeter, filterMeter } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveClientMessage } from "~/lib/protocol/live.ts";
import type { Channel } from "./channels.ts";
import type { Walk } from "./config-walks.ts";
import type { HistoryEntry } from "./history.ts";
import type { LiveHub } from "./hub.ts";

/**
 * What the hub needs of a subscriber's socket. `send` follows Bun's ServerWebSocket: > 0 bytes sent,
 * -1 queued under backpressure, 0 dropped.
 */
export type SubscriberTransport = {
  send(data: string): number;
  bufferedAmount(): number;
  close(code?: number, reason?: string): void;
  /** Ends the connection at once, dropping what it holds unsent. */
  terminate?(): void;
};

/**
 * One connected viewer: its config in force, its queue (viewer-queues.ts sends it), and the config being checked
 * (config-walks.ts). Created by LiveHub.subscribe; the socket layer forwards messages and close to it.
 */
export class Subscriber {
  revision = 0;
  predicate: EventPredicate = () => true;
  meter: FilterMeter = filterMeter();
  /** Equal for subscribers with the same filters: they can share one serialized batch. */
  configKey = "[]";
  /** Serialized matching events not yet sent, oldest first, and their characters. */
  pending: string[] = [];
  pendingBytes = 0;
  droppedTotal = 0;
  droppedUnreported = 0;
  /** The history for the current config, owed because the socket was full: sent when it drains (only the latest). */
  owedHistory: HistoryEntry<TracedEvent>[] | null = null;
  /** A newer config being checked against the history; the current one stays in force meanwhile. */
  walk: Walk | null = null;
  /** The latest config asked for and not yet compiled (the event loop turn's config work was spent). */
  requested: LiveClientMessage | null = null;
  isClosed = false;
  /** Requests this viewer was shown as pending (bounded, as the channel's pendingIds). */
  shownPending = new Set<string>();

  constructor(
    readonly hub: LiveHub,
    readonly channel: Channel,
    readonly transport: SubscriberTransport,
    /** The client address the viewer connected from (its filters are paid for from that address's allowance). */
    readonly address: string,
  ) {}

  /** A client message (already validated by parseLiveClientMessage). */
  setConfig(message: LiveClientMessage): void {
    this.hub.applyConfig(this, message);
  }

  /** The socket drained: send what waits. */
  drain(): void {
    this.hub.flush(this);
  }

  close(): void {
    this.hub.unsubscribe(this);
  }
}
