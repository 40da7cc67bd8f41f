import type { ChannelKey } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import type { FilterGroup } from "./filter-groups.ts";
import { EventHistory } from "./history.ts";
import type { LiveHubOptions } from "./options.ts";
import type { Subscriber } from "./subscriber.ts";

export type Channel = {
  key: ChannelKey;
  subscribers: Set<Subscriber>;
  /** Subscribers by filters: each distinct filter set is evaluated once per event, however many share it. */
  groups: Map<string, FilterGroup>;
  publishers: number;
  /** Publishers of this channel connected to the cluster's other server nodes (LiveHub.setRemotePublishers). */
  remotePublishers: number;
  history: EventHistory<TracedEvent>;
  lastWrite: number;
  /**
   * Requests still waiting for their answer, by event id, until their event comes or the channel's last publisher
   * leaves (bounded, the oldest go first): a viewer who joins meanwhile is shown them too.
   */
  pending: Map<string, PendingRequest>;
};

/**
 * The hub's channels, each made when first needed and forgotten once it has no viewer, publisher or history, and
 * their histories held together within totalHistoryBytes (the idle channels written to longest ago give theirs up).
 */
export class Channels {
  private readonly byKey = new Map<string, Channel>();
  private historyBytes = 0;

  constructor(
    private readonly options: Pick<LiveHubOptions, "historySize" | "historyBytes" | "totalHistoryBytes">,
    private readonly now: () => number,
  ) {}

  /** Bytes the channels' histories hold. */
  get retainedHistoryBytes(): number {
    return this.historyBytes;
  }

  get(key: string): Channel | undefined {
    return this.byKey.get(key);
  }

  /** The channel, made now if it was not kept. */
  open(key: ChannelKey): Channel {
    let channel = this.byKey.get(key);
    if (!channel) {
      channel = {
        key,
        subscribers: new Set(),
        groups: new Map(),
        publishers: 0,
        remotePublishers: 0,
        history: new EventHistory(this.options.historySize, this.options.historyBytes),
        lastWrite: this.now(),
        pending: new Map(),
      };
      this.byKey.set(key, channel);
    }
    return channel;
  }

  all(): IterableIterator<Channel> {
    return this.byKey.values();
  }

  forgetIfUnused(channel: Channel): void {
    if (channel.subscribers.size === 0 && channel.publishers === 0 && channel.remotePublishers === 0 && channel.history.length === 0) {
      this.byKey.delete(channel.key);
    }
  }

  /** A channel's history went from `before` bytes to what it holds now: the total follows. */
  historyWritten(channel: Channel, before: number): void {
    this.historyBytes += channel.history.byteLength - before;
  }

  /** Idle channels' histories, those written to longest ago first, until the total fits (`keep` are not idle). */
  evictIdle(keep: readonly string[]): void {
    if (this.historyBytes <= this.options.totalHistoryBytes) return;
    const idle = [...this.byKey.values()]
      .filter((c) => c.history.length > 0 && !keep.includes(c.key))
      .sort((a, b) => a.lastWrite - b.lastWrite);
    for (const channel of idle) {
      if (this.historyBytes <= this.options.totalHistoryBytes) return;
      this.historyBytes -= channel.history.byteLength;
      channel.history.clear();
      this.forgetIfUnused(channel);
    }
  }
}
