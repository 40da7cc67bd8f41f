import type { EventSink, EventTarget } from "~/engines/ingest/sinks.ts";
import { type ChannelKey, type ChannelRef, channelKey, channelKeysOf } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { estimateJsonLength } from "~/lib/protocol/event-size.ts";
import { type LiveClientMessage, type LiveServerMessage, liveBusyCloseCode } from "~/lib/protocol/live.ts";
import { type PendingRequest, pendingEvent } from "~/lib/protocol/pending.ts";
import { type Channel, Channels } from "./channels.ts";
import { type AppliedConfig, ConfigWalks } from "./config-walks.ts";
import { FilterAllowance } from "./filter-allowance.ts";
import { FilterGroups } from "./filter-groups.ts";
import { defaultLiveHubOptions, defaultSendBudget, type LiveHubOptions } from "./options.ts";
import type { SendBudget } from "./send-budget.ts";
import { Subscriber, type SubscriberTransport } from "./subscriber.ts";
import { ViewerQueues } from "./viewer-queues.ts";

/** What the hub tells this server's node of a cluster (engines/cluster), as soon as it happens. */
export type LiveClusterHooks = {
  /** A publisher connected here or disconnected. */
  publishersChanged(): void;
  /** A channel got its first viewer here, or lost its last. */
  watchedChanged(): void;
};

/** The parts a hub is given (runtime.ts makes them from the config). */
export type LiveHubParts = {
  /** What viewers hold unsent, against a bound each and a share of MEMORY_LIMIT for all. */
  sendBudget?: SendBudget;
  /** Filter steps per second for the whole process, per client address and for anonymous viewers together. */
  filterAllowance?: FilterAllowance;
  /** The clock the filter buckets refill by and histories are aged by (ms). */
  now?: () => number;
  /** With a broker: this node of the cluster, told of changes in publishers and watched channels. */
  cluster?: LiveClusterHooks;
};

export type LiveStats = { numPublishers: number; numSubscribers: number };

/** Pending requests remembered per channel and per viewer until their event comes. */
const MAX_PENDING_SHOWN = 1000;

function remember(ids: Set<string>, id: string): void {
  ids.add(id);
  if (ids.size > MAX_PENDING_SHOWN) ids.delete(ids.values().next().value!);
}

function keep(pending: Map<string, PendingRequest>, request: PendingRequest): void {
  pending.set(request.event_id, request);
  if (pending.size > MAX_PENDING_SHOWN) pending.delete(pending.keys().next().value!);
}

/**
 * The live fan-out: publishers' events go to the subscribers of the same namespace or link, each through
 * its own filters (applied here, on the server) and its own bounded queue, so one slow viewer never holds
 * up a publisher or another viewer. Also the ingest sink that receives validated events.
 *
 * In parts: `channels.ts` (each channel's viewers, publishers and history, the histories' total bound),
 * `filter-groups.ts` (viewers grouped by filters, and what evaluating them may cost), `viewer-queues.ts` (each
 * viewer's queue, sent as its socket keeps up, within the send budget), `config-walks.ts` (new configs checked
 * against the history within each turn's steps).
 */
export class LiveHub implements EventSink {
  readonly options: LiveHubOptions;
  readonly sendBudget: SendBudget;
  readonly filterAllowance: FilterAllowance;
  private readonly now: () => number;
  private readonly cluster: LiveClusterHooks | null;
  private readonly channels: Channels;
  private readonly groups: FilterGroups;
  private readonly queues: ViewerQueues;
  private readonly walks: ConfigWalks;
  private clusterNotice: string | null = null;

  constructor(options: Partial<LiveHubOptions> = {}, parts: LiveHubParts = {}) {
    this.options = { ...defaultLiveHubOptions, ...options };
    this.sendBudget = parts.sendBudget ?? defaultSendBudget(this.options);
    this.now = parts.now ?? Date.now;
    this.filterAllowance = parts.filterAllowance ?? new FilterAllowance({}, this.now);
    this.cluster = parts.cluster ?? null;
    this.channels = new Channels(this.options, this.now);
    this.groups = new FilterGroups(this.options, this.filterAllowance, this.now);
    this.queues = new ViewerQueues(this.options, this.sendBudget, (sub) => this.unsubscribe(sub));
    this.walks = new ConfigWalks(this.options, this.filterAllowance, {
      hasRoomForFilterSet: (sub, configKey) => this.groups.hasRoomForFilterSet(sub, configKey),
      payerOf: (sub) => this.groups.payerOf(sub),
      apply: (sub, config) => this.putInForce(sub, config),
      tell: (sub, message) => this.queues.sendControl(sub, message),
    });
  }

  /** Bytes the channels' histories hold (the server's memory log). */
  get retainedHistoryBytes(): number {
    return this.channels.retainedHistoryBytes;
  }

  // ---- publishers ----

  /** For the publisher socket: a publisher for this target connected. */
  publisherConnected(target: EventTarget): void {
    for (const key of channelKeysOf(target)) {
      const channel = this.channels.open(key);
      channel.publishers++;
      this.announceStats(channel);
    }
    this.cluster?.publishersChanged();
  }

  /** For the publisher socket: call exactly once per publisherConnected, when the socket closes. */
  publisherDisconnected(target: EventTarget): void {
    for (const key of channelKeysOf(target)) {
      const channel = this.channels.get(key);
      if (!channel || channel.publishers === 0) continue;
      channel.publishers--;
      // Their requests that never ended (the program was killed) would wait for ever.
      if (channel.publishers + channel.remotePublishers === 0) channel.pending.clear();
      this.announceStats(channel);
      this.channels.forgetIfUnused(channel);
    }
    this.cluster?.publishersChanged();
  }

  /** Validated events of one target: fan out to that namespace's and/or that link's subscribers. Never blocks. */
  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    if (events.length === 0) return;
    const keys = channelKeysOf(target);
    if (keys.length === 0) return;
    // Serialized once, and only when a viewer's filter wants the event (or a history is sent later).
    const jsons = new Array<string | undefined>(events.length);
    const now = this.now();
    for (const key of keys) {
      const channel = this.channels.open(key);
      channel.lastWrite = now;
      const before = channel.history.byteLength;
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const wasPending = channel.pending.size > 0 && channel.pending.delete(event.event_id);
        for (const group of channel.groups.values()) {
          const isMatch = this.groups.evaluate(channel, group, event, now);
          if (wasPending) this.settle(group.members, event.event_id, isMatch !== true);
          if (isMatch === null) {
            for (const sub of group.members) this.queues.countDropped(sub, 1);
            continue;
          }
          if (!isMatch) continue;
          let json = jsons[i];
          if (json === undefined) {
            json = JSON.stringify(event);
            jsons[i] = json;
          }
          for (const sub of group.members) this.queues.enqueue(sub, json);
        }
        const json = jsons[i];
        channel.history.push(event, json ?? null, json === undefined ? estimateJsonLength(event) : 0);
      }
      this.channels.historyWritten(channel, before);
    }
    this.channels.evictIdle(keys);
  }

  /**
   * Requests still waiting for their answer (ingest validated and bounded them): each viewer whose filters they pass,
   * as far as their fields go, is told now. Never kept: a viewer who joins later sees the event when it comes.
   */
  showPending(target: EventTarget, requests: readonly PendingRequest[]): void {
    if (requests.length === 0) return;
    const now = this.now();
    for (const key of channelKeysOf(target)) {
      // A channel is kept while a publisher is connected to it, here or on another node: their notices only come then.
      const channel = this.channels.get(key);
      if (!channel) continue;
      for (const r of requests) keep(channel.pending, r);
      for (const group of channel.groups.values()) {
        const shown = requests.filter((r) => this.groups.evaluate(channel, group, pendingEvent(r), now) === true);
        if (shown.length === 0) continue;
        for (const sub of group.members) this.tellPending(sub, shown);
      }
    }
  }

  private tellPending(sub: Subscriber, requests: PendingRequest[]): void {
    for (const r of requests) remember(sub.shownPending, r.event_id);
    this.queues.sendControl(sub, { type: "pending", requests });
  }

  /** A viewer who joined or changed its filters: the channel's requests still waiting that its filters pass. */
  private sendPendingTo(sub: Subscriber): void {
    const channel = sub.channel;
    if (channel.pending.size === 0) return;
    const group = channel.groups.get(sub.configKey);
    if (!group) return;
    const now = this.now();
    const shown = [...channel.pending.values()].filter((r) => this.groups.evaluate(channel, group, pendingEvent(r), now) === true);
    if (shown.length > 0) this.tellPending(sub, shown);
  }

  /** A request shown as pending ended: a viewer whose filters its event does not pass is told to drop the row. */
  private settle(members: Iterable<Subscriber>, eventId: string, isHidden: boolean): void {
    for (const sub of members) {
      if (!sub.shownPending.delete(eventId) || !isHidden) continue;
      this.queues.sendControl(sub, { type: "settled", eventIds: [eventId] });
    }
  }

  // ---- subscribers ----

  /** Whether one more viewer may join (checked before the socket upgrade). */
  hasRoomFor(ref: ChannelRef): boolean {
    return (this.channels.get(channelKey(ref))?.subscribers.size ?? 0) < this.options.maxSubscribersPerChannel;
  }

  subscribe(ref: ChannelRef, transport: SubscriberTransport, hello: { expiresAt: Date | null; address?: string }): Subscriber {
    const channel = this.channels.open(channelKey(ref));
    const sub = new Subscriber(this, channel, transport, hello.address ?? "");
    channel.subscribers.add(sub);
    this.groups.join(sub);
    this.queues.sendControl(sub, {
      type: "hello",
      channel: ref.kind,
      expiresAt: hello.expiresAt ? hello.expiresAt.toISOString() : null,
    });
    this.announceStats(channel);
    if (channel.subscribers.size === 1) this.cluster?.watchedChanged();
    // The history is the biggest thing a viewer is sent, and one that joins and never reads holds it: with the
    // budget spent on viewers who do not read, a newcomer is asked to come back rather than sent it.
    if (!this.sendBudget.canTake(channel.history.byteLength)) {
      this.unsubscribe(sub);
      transport.close(liveBusyCloseCode, "the live view is holding too much for viewers who do not read; try again shortly");
      return sub;
    }
    this.queues.sendHistory(sub, channel.history.entries());
    this.queues.account(sub, true);
    this.sendPendingTo(sub);
    return sub;
  }

  unsubscribe(sub: Subscriber): void {
    if (sub.isClosed) return;
    sub.isClosed = true;
    this.queues.forget(sub);
    this.walks.forget(sub);
    sub.channel.subscribers.delete(sub);
    this.groups.leave(sub);
    this.announceStats(sub.channel);
    this.channels.forgetIfUnused(sub.channel);
    if (sub.channel.subscribers.size === 0) this.cluster?.watchedChanged();
  }

  /**
   * A new config is checked against the retained history in slices that yield to the event loop (config-walks.ts);
   * it takes effect (config-applied, then its history) only when the walk is done, and is refused (setFilterError)
   * if it spends more filter steps than one event or the whole history may. The previous config stays in force
   * meanwhile.
   */
  applyConfig(sub: Subscriber, message: LiveClientMessage): void {
    this.walks.request(sub, message);
  }

  /** Sends what waits for one subscriber, as far as its socket keeps up; the rest waits (bounded) for drain. */
  flush(sub: Subscriber): void {
    this.queues.flush(sub);
  }

  /** Sends now whatever waits for every subscriber (tests and shutdown). */
  flushAll(): void {
    this.queues.flushAll();
  }

  stats(ref: ChannelRef): LiveStats {
    const channel = this.channels.get(channelKey(ref));
    return { numPublishers: (channel?.publishers ?? 0) + (channel?.remotePublishers ?? 0), numSubscribers: channel?.subscribers.size ?? 0 };
  }

  /** Ends every subscriber of a link (it expired) after telling them. */
  closeLink(linkId: string): void {
    const channel = this.channels.get(channelKey({ kind: "link", linkId }));
    if (!channel) return;
    for (const sub of [...channel.subscribers]) this.expire(sub);
  }

  expire(sub: Subscriber): void {
    if (sub.isClosed) return;
    this.queues.sendControl(sub, { type: "expired" });
    this.unsubscribe(sub);
    sub.transport.close(4410, "link expired");
  }

  /** A walk ended well: the viewer moves to its new filters' group, and is sent config-applied and their history. */
  private putInForce(sub: Subscriber, config: AppliedConfig): void {
    this.groups.leave(sub);
    sub.predicate = config.predicate;
    sub.meter = config.meter;
    sub.configKey = config.configKey;
    this.groups.join(sub);
    sub.revision = config.revision;
    const firstSeq = sub.channel.history.firstSeq;
    const entries = config.matches.filter((entry) => entry.seq >= firstSeq);
    this.queues.restart(sub, entries, { type: "config-applied", revision: config.revision });
    this.sendPendingTo(sub);
  }

  private announceStats(channel: Channel): void {
    const message = JSON.stringify({
      type: "stats",
      numPublishers: channel.publishers + channel.remotePublishers,
      numSubscribers: channel.subscribers.size,
      ...(this.clusterNotice ? { notice: this.clusterNotice } : {}),
    } satisfies LiveServerMessage);
    for (const sub of channel.subscribers) sub.transport.send(message);
  }

  // ---- for this node of a cluster (engines/cluster) ----

  /**
   * Publishers connected to other server nodes, by channel key: the whole count, replacing the last one. Viewers of a
   * changed channel are told.
   */
  setRemotePublishers(counts: ReadonlyMap<ChannelKey, number>): void {
    for (const channel of this.channels.all()) {
      if (channel.remotePublishers > 0 && !counts.has(channel.key)) {
        channel.remotePublishers = 0;
        if (channel.publishers === 0) channel.pending.clear();
        this.announceStats(channel);
        this.channels.forgetIfUnused(channel);
      }
    }
    for (const [key, n] of counts) {
      const existing = this.channels.get(key);
      if ((existing?.remotePublishers ?? 0) === n) continue;
      const channel = existing ?? this.channels.open(key);
      channel.remotePublishers = n;
      this.announceStats(channel);
      this.channels.forgetIfUnused(channel);
    }
  }

  /** This node's own publishers by channel key (what a cluster node tells the others). */
  localPublishers(): Map<ChannelKey, number> {
    const counts = new Map<ChannelKey, number>();
    for (const channel of this.channels.all()) if (channel.publishers > 0) counts.set(channel.key, channel.publishers);
    return counts;
  }

  /** Channel keys with viewers here (a cluster node asks the others for these channels' events). */
  watchedChannels(): ChannelKey[] {
    const keys: ChannelKey[] = [];
    for (const channel of this.channels.all()) if (channel.subscribers.size > 0) keys.push(channel.key);
    return keys;
  }

  /** The seq the channel's next event gets (0 for a channel not kept). */
  historyEnd(key: ChannelKey): number {
    return this.channels.get(key)?.history.endSeq ?? 0;
  }

  /** The channel's retained events numbered below `beforeSeq`, oldest first. */
  historyBefore(key: ChannelKey, beforeSeq: number): TracedEvent[] {
    const history = this.channels.get(key)?.history;
    if (!history) return [];
    return history
      .entries()
      .filter((e) => e.seq < beforeSeq)
      .map((e) => e.item);
  }

  /** Of these events, those whose event_id the channel's history does not hold yet. */
  notInHistory(key: ChannelKey, events: readonly TracedEvent[]): TracedEvent[] {
    const history = this.channels.get(key)?.history;
    if (!history || history.length === 0) return [...events];
    const ids = new Set(history.entries().map((e) => e.item.event_id));
    return events.filter((e) => !ids.has(e.event_id));
  }

  /** What every viewer is told about the live view across nodes (null: all well); re-announced to every channel. */
  setClusterNotice(notice: string | null): void {
    if (notice === this.clusterNotice) return;
    this.clusterNotice = notice;
    for (const channel of this.channels.all()) if (channel.subscribers.size > 0) this.announceStats(channel);
  }
}
