import type { EventSink, EventTarget } from "~/engines/ingest/sinks.ts";
import { compileFilterChips, type EventPredicate, type FilterMeter, filterMeter, filterStepsPerEvent } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { estimateJsonLength } from "~/lib/protocol/event-size.ts";
import type { LiveClientMessage, LiveServerMessage } from "~/lib/protocol/live.ts";
import { TokenBucket } from "~/lib/rate-limit.ts";
import { EventHistory, type HistoryEntry } from "./history.ts";

/**
 * What the hub needs of a subscriber's socket. `send` follows Bun's ServerWebSocket: > 0 bytes sent,
 * -1 queued under backpressure, 0 dropped.
 */
export type SubscriberTransport = {
  send(data: string): number;
  bufferedAmount(): number;
  close(code?: number, reason?: string): void;
};

/** A namespace's live view, or one shared link's. Never both: that is what keeps them apart. */
export type ChannelRef = { kind: "namespace"; namespaceId: string } | { kind: "link"; linkId: string };

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
  maxSubscribersPerChannel: 1000,
  filterStepsPerEvent,
  filterStepsPerSecond: 2_500_000,
  filterBurstSteps: 250_000,
  channelFilterStepsPerSecond: 10_000_000,
  channelFilterBurstSteps: 500_000,
  filterHistorySteps: 10_000_000,
  filterSliceSteps: 200_000,
};

const retryDelayMs = 20;

/** Subscribers with the same filters: evaluated once per event, spending from their bucket of steps. */
type Group = { predicate: EventPredicate; meter: FilterMeter; members: Set<Subscriber>; bucket: TokenBucket; isEmpty: boolean };

type Channel = {
  key: string;
  subscribers: Set<Subscriber>;
  /** Subscribers by filters: each distinct filter set is evaluated once per event, however many share it. */
  groups: Map<string, Group>;
  publishers: number;
  /** Publishers of this channel connected to the cluster's other server nodes (setRemotePublishers). */
  remotePublishers: number;
  history: EventHistory<TracedEvent>;
  lastWrite: number;
};

/** A config being checked against the retained history, a slice at a time; it takes effect when the walk is done. */
type Walk = {
  sub: Subscriber;
  revision: number;
  configKey: string;
  predicate: EventPredicate;
  meter: FilterMeter;
  nextSeq: number;
  spent: number;
  matches: HistoryEntry<TracedEvent>[];
};

export type LiveStats = { numPublishers: number; numSubscribers: number };

/** One connected viewer. Created by LiveHub.subscribe; the socket layer forwards messages and close to it. */
export class Subscriber {
  revision = 0;
  predicate: EventPredicate = () => true;
  meter: FilterMeter = filterMeter();
  /** Equal for subscribers with the same filters: they can share one serialized batch. */
  configKey = "[]";
  /** Serialized matching events not yet sent, oldest first. */
  pending: string[] = [];
  droppedTotal = 0;
  droppedUnreported = 0;
  /** The history for the current config, owed because the socket was full: sent when it drains (only the latest). */
  owedHistory: HistoryEntry<TracedEvent>[] | null = null;
  /** A newer config being checked against the history; the current one stays in force meanwhile. */
  walk: Walk | null = null;
  /** The latest config asked for and not yet compiled (the event loop turn's config work was spent). */
  requested: LiveClientMessage | null = null;
  isClosed = false;

  constructor(
    readonly hub: LiveHub,
    readonly channel: Channel,
    readonly transport: SubscriberTransport,
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

function channelKey(ref: ChannelRef): string {
  return ref.kind === "namespace" ? `ns:${ref.namespaceId}` : `link:${ref.linkId}`;
}

function targetKeys(target: EventTarget): string[] {
  const keys: string[] = [];
  if (target.namespaceId) keys.push(`ns:${target.namespaceId}`);
  if (target.linkId) keys.push(`link:${target.linkId}`);
  return keys;
}

/**
 * The live fan-out: publishers' events go to the subscribers of the same namespace or link, each through
 * its own filters (applied here, on the server) and its own bounded queue, so one slow viewer never holds
 * up a publisher or another viewer. Also the ingest sink that receives validated events.
 */
export class LiveHub implements EventSink {
  private readonly channels = new Map<string, Channel>();
  private readonly dirty = new Set<Subscriber>();
  private timer: { cancel: () => void } | null = null;
  private readonly retry = new Set<Subscriber>();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private historyBytes = 0;
  /** Configs being checked against histories, in turn; one slice of steps per event-loop turn in all. */
  private walks: Walk[] = [];
  /** Subscribers whose latest config waits to be compiled, in the order they asked. */
  private readonly requests = new Set<Subscriber>();
  private walkTimer: ReturnType<typeof setTimeout> | null = null;
  /** Filter steps spent on configs (compiling and walks) in this event-loop turn, all viewers together. */
  private turnSteps = 0;
  private turnReset: ReturnType<typeof setImmediate> | null = null;
  /**
   * Batches built in this flush round, by config: viewers with the same filters were sent the same events, so
   * the message is built once and sent to each (checked: same length, same first and last event).
   */
  private batchCache = new Map<string, { length: number; first: string; last: string; text: string }>();
  readonly options: LiveHubOptions;

  constructor(options: Partial<LiveHubOptions> = {}) {
    this.options = { ...defaultLiveHubOptions, ...options };
  }

  /** Bytes the channels' histories hold (the server's memory log). */
  get retainedHistoryBytes(): number {
    return this.historyBytes;
  }

  // ---- publishers ----

  /** For the publisher socket: a publisher for this target connected. */
  publisherConnected(target: EventTarget): void {
    for (const key of targetKeys(target)) {
      const channel = this.channel(key);
      channel.publishers++;
      this.announceStats(channel);
    }
    this.onPublishersChanged?.();
  }

  /** For the publisher socket: call exactly once per publisherConnected, when the socket closes. */
  publisherDisconnected(target: EventTarget): void {
    for (const key of targetKeys(target)) {
      const channel = this.channels.get(key);
      if (!channel || channel.publishers === 0) continue;
      channel.publishers--;
      this.announceStats(channel);
      this.forgetIfUnused(channel);
    }
    this.onPublishersChanged?.();
  }

  /** Validated events of one target: fan out to that namespace's and/or that link's subscribers. Never blocks. */
  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    if (events.length === 0) return;
    const keys = targetKeys(target);
    if (keys.length === 0) return;
    // Serialized once, and only when a viewer's filter wants the event (or a history is sent later).
    const jsons = new Array<string | undefined>(events.length);
    const now = Date.now();
    for (const key of keys) {
      const channel = this.channel(key);
      channel.lastWrite = now;
      const before = channel.history.byteLength;
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        for (const group of channel.groups.values()) {
          const isMatch = this.evaluate(channel, group, event, now);
          if (isMatch === null) {
            for (const sub of group.members) this.countDropped(sub, 1);
            continue;
          }
          if (!isMatch) continue;
          let json = jsons[i];
          if (json === undefined) {
            json = JSON.stringify(event);
            jsons[i] = json;
          }
          for (const sub of group.members) this.enqueue(sub, json);
        }
        const json = jsons[i];
        channel.history.push(event, json ?? null, json === undefined ? estimateJsonLength(event) : 0);
      }
      this.historyBytes += channel.history.byteLength - before;
    }
    if (this.historyBytes > this.options.totalHistoryBytes) this.evictHistory(keys);
  }

  // ---- subscribers ----

  /** Whether one more viewer may join (checked before the socket upgrade). */
  hasRoomFor(ref: ChannelRef): boolean {
    return (this.channels.get(channelKey(ref))?.subscribers.size ?? 0) < this.options.maxSubscribersPerChannel;
  }

  subscribe(ref: ChannelRef, transport: SubscriberTransport, hello: { expiresAt: Date | null }): Subscriber {
    const channel = this.channel(channelKey(ref));
    const sub = new Subscriber(this, channel, transport);
    channel.subscribers.add(sub);
    this.joinGroup(sub);
    this.sendControl(sub, {
      type: "hello",
      channel: ref.kind,
      expiresAt: hello.expiresAt ? hello.expiresAt.toISOString() : null,
    });
    this.announceStats(channel);
    this.sendHistory(sub, channel.history.entries());
    if (channel.subscribers.size === 1) this.onWatchedChanged?.();
    return sub;
  }

  unsubscribe(sub: Subscriber): void {
    if (sub.isClosed) return;
    sub.isClosed = true;
    sub.pending = [];
    sub.owedHistory = null;
    sub.requested = null;
    this.requests.delete(sub);
    this.cancelWalk(sub);
    this.dirty.delete(sub);
    this.retry.delete(sub);
    sub.channel.subscribers.delete(sub);
    this.leaveGroup(sub);
    this.announceStats(sub.channel);
    this.forgetIfUnused(sub.channel);
    if (sub.channel.subscribers.size === 0) this.onWatchedChanged?.();
  }

  /**
   * A new config is checked against the retained history in slices that yield to the event loop; it takes effect
   * (config-applied, then its history) only when the walk is done, and is refused (setFilterError) if it spends
   * more filter steps than one event or the whole history may. The previous config stays in force meanwhile.
   */
  applyConfig(sub: Subscriber, message: LiveClientMessage): void {
    if (sub.isClosed) return;
    // Only the latest config is answered: one waiting or still being checked is abandoned.
    sub.requested = message;
    this.cancelWalk(sub);
    if (this.requests.has(sub) || this.turnStepsLeft() <= 0) {
      this.requests.add(sub);
      this.scheduleWalks();
      return;
    }
    this.startConfig(sub);
  }

  stats(ref: ChannelRef): LiveStats {
    const channel = this.channels.get(channelKey(ref));
    return { numPublishers: (channel?.publishers ?? 0) + (channel?.remotePublishers ?? 0), numSubscribers: channel?.subscribers.size ?? 0 };
  }

  /** Ends every subscriber of a link (it expired) after telling them. */
  closeLink(linkId: string): void {
    const channel = this.channels.get(`link:${linkId}`);
    if (!channel) return;
    for (const sub of [...channel.subscribers]) this.expire(sub);
  }

  expire(sub: Subscriber): void {
    if (sub.isClosed) return;
    this.sendControl(sub, { type: "expired" });
    this.unsubscribe(sub);
    sub.transport.close(4410, "link expired");
  }

  /** Sends now whatever waits for every subscriber (tests and shutdown). */
  flushAll(): void {
    if (this.timer) {
      this.timer.cancel();
      this.timer = null;
    }
    const subs = [...this.dirty, ...this.retry];
    this.dirty.clear();
    this.retry.clear();
    for (const sub of subs) this.flush(sub);
    this.batchCache.clear();
  }

  // ---- internals ----

  private channel(key: string): Channel {
    let channel = this.channels.get(key);
    if (!channel) {
      channel = {
        key,
        subscribers: new Set(),
        groups: new Map(),
        publishers: 0,
        remotePublishers: 0,
        history: new EventHistory(this.options.historySize, this.options.historyBytes),
        lastWrite: Date.now(),
      };
      this.channels.set(key, channel);
    }
    return channel;
  }

  private joinGroup(sub: Subscriber): void {
    const groups = sub.channel.groups;
    let group = groups.get(sub.configKey);
    if (!group) {
      group = {
        predicate: sub.predicate,
        meter: sub.meter,
        members: new Set(),
        bucket: this.fullBucket(this.options.filterBurstSteps),
        isEmpty: sub.configKey === "[]",
      };
      groups.set(sub.configKey, group);
    }
    group.members.add(sub);
  }

  private leaveGroup(sub: Subscriber): void {
    const group = sub.channel.groups.get(sub.configKey);
    if (!group) return;
    group.members.delete(sub);
    if (group.members.size === 0) sub.channel.groups.delete(sub.configKey);
  }

  private forgetIfUnused(channel: Channel): void {
    if (channel.subscribers.size === 0 && channel.publishers === 0 && channel.remotePublishers === 0 && channel.history.length === 0) {
      this.channels.delete(channel.key);
    }
  }

  private evictHistory(keep: string[]): void {
    const idle = [...this.channels.values()]
      .filter((c) => c.history.length > 0 && !keep.includes(c.key))
      .sort((a, b) => a.lastWrite - b.lastWrite);
    for (const channel of idle) {
      if (this.historyBytes <= this.options.totalHistoryBytes) return;
      this.historyBytes -= channel.history.byteLength;
      channel.history.clear();
      this.forgetIfUnused(channel);
    }
  }

  private enqueue(sub: Subscriber, json: string): void {
    sub.pending.push(json);
    if (sub.pending.length >= this.options.maxBatch) {
      this.flush(sub);
      return;
    }
    this.markDirty(sub);
  }

  private markDirty(sub: Subscriber): void {
    this.dirty.add(sub);
    if (this.timer) return;
    const run = () => {
      this.timer = null;
      this.flushAll();
    };
    if (this.options.flushIntervalMs > 0) {
      const handle = setTimeout(run, this.options.flushIntervalMs);
      this.timer = { cancel: () => clearTimeout(handle) };
    } else {
      const handle = setImmediate(run);
      this.timer = { cancel: () => clearImmediate(handle) };
    }
  }

  private trim(sub: Subscriber): void {
    const over = sub.pending.length - this.options.queueLimit;
    if (over <= 0) return;
    sub.pending.splice(0, over);
    sub.droppedTotal += over;
    sub.droppedUnreported += over;
  }

  /** Sends what waits for one subscriber, as far as its socket keeps up; the rest waits (bounded) for drain. */
  flush(sub: Subscriber): void {
    if (sub.isClosed) return;
    this.dirty.delete(sub);
    if (sub.transport.bufferedAmount() > this.options.maxBufferedBytes) {
      this.trim(sub);
      this.retryLater(sub); // And on drain, whichever comes first.
      return;
    }
    if (sub.owedHistory) {
      const entries = sub.owedHistory;
      sub.owedHistory = null;
      this.sendHistory(sub, entries);
    }
    if (sub.droppedUnreported > 0) {
      this.sendControl(sub, { type: "dropped", count: sub.droppedUnreported, total: sub.droppedTotal });
      sub.droppedUnreported = 0;
    }
    while (sub.pending.length > 0) {
      const batch = sub.pending.splice(0, this.options.maxBatch);
      const status = sub.transport.send(this.batchText(sub.configKey, batch));
      if (status === 0) {
        sub.droppedTotal += batch.length;
        sub.droppedUnreported += batch.length;
        break;
      }
      if (status < 0 || sub.transport.bufferedAmount() > this.options.maxBufferedBytes) break;
    }
    this.trim(sub);
    if (sub.pending.length > 0 || sub.droppedUnreported > 0) this.retryLater(sub);
  }

  /** A subscriber whose socket is full is looked at again after a pause, not on every loop turn. */
  private retryLater(sub: Subscriber): void {
    this.retry.add(sub);
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = null;
      const subs = [...this.retry];
      this.retry.clear();
      for (const s of subs) this.flush(s);
      this.batchCache.clear();
    }, retryDelayMs);
  }

  private batchText(configKey: string, batch: string[]): string {
    const first = batch[0]!;
    const last = batch[batch.length - 1]!;
    const cached = this.batchCache.get(configKey);
    if (cached && cached.length === batch.length && cached.first === first && cached.last === last) return cached.text;
    const text = `{"type":"events","events":[${batch.join(",")}]}`;
    this.batchCache.set(configKey, { length: batch.length, first, last, text });
    return text;
  }

  private sendHistory(sub: Subscriber, entries: readonly HistoryEntry<TracedEvent>[]): void {
    const history = sub.channel.history;
    const parts = entries.map((entry) => history.json(entry));
    sub.transport.send(`{"type":"history","revision":${sub.revision},"events":[${parts.join(",")}]}`);
  }

  /**
   * Whether the group's filters match the event: null when they cannot afford it (more steps than one event may
   * take, or than the group's bucket holds now). Empty filters cost nothing.
   */
  private evaluate(channel: Channel, group: Group, event: TracedEvent, now: number): boolean | null {
    if (group.isEmpty) return true;
    const o = this.options;
    const n = channel.groups.size;
    const rate = Math.min(o.filterStepsPerSecond, o.channelFilterStepsPerSecond / n);
    const burst = Math.min(o.filterBurstSteps, o.channelFilterBurstSteps / n);
    group.bucket.setLimit(rate, burst);
    const allowance = Math.min(o.filterStepsPerEvent, group.bucket.available(now));
    if (allowance <= 0) return null;
    const meter = group.meter;
    meter.left = allowance;
    meter.ranOutAt = null;
    const isMatch = group.predicate(event);
    group.bucket.spend(allowance - meter.left);
    return meter.left < 0 ? null : isMatch;
  }

  /** Filter steps that refill at a rate, up to a burst (which shrinks as a channel's filter sets grow in number). */
  private fullBucket(steps: number): TokenBucket {
    return new TokenBucket({ ratePerSecond: this.options.filterStepsPerSecond, burst: steps }, Date.now());
  }

  private countDropped(sub: Subscriber, count: number): void {
    sub.droppedTotal += count;
    sub.droppedUnreported += count;
    this.markDirty(sub);
  }

  /**
   * Checks up to `budget` steps' worth of the history against the walk's config. True when the walk ended
   * (applied or refused) in this call; false when it must go on later.
   */
  private advance(walk: Walk, budget: number): boolean {
    const { filterStepsPerEvent, filterHistorySteps } = this.options;
    const history = walk.sub.channel.history;
    const meter = walk.meter;
    let spent = 0;
    let seq = Math.max(walk.nextSeq, history.firstSeq);
    for (; seq < history.endSeq; seq++) {
      if (spent >= budget) {
        walk.nextSeq = seq;
        return false;
      }
      const entry = history.at(seq)!;
      meter.left = filterStepsPerEvent;
      meter.ranOutAt = null;
      const isMatch = walk.predicate(entry.item);
      // At least a step per event, so a walk of free filters still yields on a long history.
      const cost = filterStepsPerEvent - meter.left + 1;
      spent += cost;
      walk.spent += cost;
      if (meter.left < 0) {
        const at = meter.ranOutAt ?? { index: 0, position: 0 };
        this.refuse(walk, `more than ${filterStepsPerEvent.toLocaleString("en")} steps for one event`, at);
        return true;
      }
      if (walk.spent > filterHistorySteps) {
        this.refuse(walk, `more than ${filterHistorySteps.toLocaleString("en")} steps for the retained events`, { index: 0, position: 0 });
        return true;
      }
      if (isMatch) walk.matches.push(entry);
    }
    this.finishWalk(walk);
    return true;
  }

  private finishWalk(walk: Walk): void {
    const sub = walk.sub;
    this.endWalk(walk);
    this.leaveGroup(sub);
    sub.predicate = walk.predicate;
    sub.meter = walk.meter;
    sub.configKey = walk.configKey;
    this.joinGroup(sub);
    sub.revision = walk.revision;
    // What waited was chosen by the old config; the history covers everything up to now under the new one.
    sub.pending = [];
    this.dirty.delete(sub);
    this.sendControl(sub, { type: "config-applied", revision: walk.revision });
    const firstSeq = sub.channel.history.firstSeq;
    const entries = walk.matches.filter((entry) => entry.seq >= firstSeq);
    // A viewer that changes filters faster than it reads gets one history, for its latest config.
    if (sub.transport.bufferedAmount() > this.options.maxBufferedBytes) {
      sub.owedHistory = entries;
      this.retryLater(sub);
    } else {
      sub.owedHistory = null;
      this.sendHistory(sub, entries);
    }
  }

  private refuse(walk: Walk, what: string, at: { index: number; position: number }): void {
    this.endWalk(walk);
    this.sendControl(walk.sub, {
      type: "setFilterError",
      revision: walk.revision,
      message: `filter too costly for the live view (${what}): use a simpler regex or fewer conditions`,
      ...at,
    });
  }

  private endWalk(walk: Walk): void {
    if (walk.sub.walk === walk) walk.sub.walk = null;
    const k = this.walks.indexOf(walk);
    if (k >= 0) this.walks.splice(k, 1);
  }

  private cancelWalk(sub: Subscriber): void {
    if (sub.walk) this.endWalk(sub.walk);
  }

  /** Compiles the subscriber's latest config and checks it against the history as far as this turn's steps go. */
  private startConfig(sub: Subscriber): void {
    const message = sub.requested;
    sub.requested = null;
    if (!message || sub.isClosed) return;
    const meter = filterMeter();
    const compiled = compileFilterChips(message.filters, meter);
    this.spendTurn(compiled.compileSteps);
    if (!compiled.ok) {
      this.sendControl(sub, { type: "setFilterError", revision: message.revision, ...compiled.error });
      return;
    }
    const walk: Walk = {
      sub,
      revision: message.revision,
      configKey: JSON.stringify(message.filters),
      predicate: compiled.predicate,
      meter,
      nextSeq: sub.channel.history.firstSeq,
      spent: 0,
      matches: [],
    };
    sub.walk = walk;
    // A cheap config over a short history is done at once; the rest waits its turn.
    if (!this.advanceWithinTurn(walk, this.turnStepsLeft())) {
      this.walks.push(walk);
      this.scheduleWalks();
    }
  }

  private advanceWithinTurn(walk: Walk, budget: number): boolean {
    const before = walk.spent;
    const isDone = this.advance(walk, budget);
    this.spendTurn(walk.spent - before);
    return isDone;
  }

  private turnStepsLeft(): number {
    return this.options.filterSliceSteps - this.turnSteps;
  }

  private spendTurn(steps: number): void {
    this.turnSteps += steps;
    this.turnReset ??= setImmediate(() => {
      this.turnReset = null;
      this.turnSteps = 0;
    });
  }

  private scheduleWalks(): void {
    this.walkTimer ??= setTimeout(() => this.runWalks(), 0);
  }

  /** This turn's config work: waiting configs compiled first, then walks in turn, until the turn's steps are spent. */
  private runWalks(): void {
    this.walkTimer = null;
    while (this.turnStepsLeft() > 0 && (this.requests.size > 0 || this.walks.length > 0)) {
      const [sub] = this.requests;
      if (sub) {
        this.requests.delete(sub);
        this.startConfig(sub);
        continue;
      }
      const walk = this.walks.shift()!;
      const share = Math.max(1, Math.ceil(this.turnStepsLeft() / (this.walks.length + 1)));
      if (!this.advanceWithinTurn(walk, share)) this.walks.push(walk);
    }
    if (this.requests.size > 0 || this.walks.length > 0) this.scheduleWalks();
  }

  private sendControl(sub: Subscriber, message: LiveServerMessage): void {
    sub.transport.send(JSON.stringify(message));
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

  // ---- the cluster (engines/cluster/cluster-node.ts) ----

  private clusterNotice: string | null = null;

  /**
   * Publishers connected to other server nodes, by channel key (`ns:<id>`, `link:<id>`): the whole count, replacing
   * the last one. Viewers of a changed channel are told.
   */
  setRemotePublishers(counts: ReadonlyMap<string, number>): void {
    for (const channel of this.channels.values()) {
      if (channel.remotePublishers > 0 && !counts.has(channel.key)) {
        channel.remotePublishers = 0;
        this.announceStats(channel);
        this.forgetIfUnused(channel);
      }
    }
    for (const [key, n] of counts) {
      const existing = this.channels.get(key);
      if ((existing?.remotePublishers ?? 0) === n) continue;
      const channel = existing ?? this.channel(key);
      channel.remotePublishers = n;
      this.announceStats(channel);
      this.forgetIfUnused(channel);
    }
  }

  /** This node's own publishers by channel key (what a cluster node tells the others). */
  localPublishers(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const channel of this.channels.values()) if (channel.publishers > 0) counts.set(channel.key, channel.publishers);
    return counts;
  }

  /** Channel keys with viewers here (a cluster node asks the others for these channels' events). */
  watchedChannels(): string[] {
    const keys: string[] = [];
    for (const channel of this.channels.values()) if (channel.subscribers.size > 0) keys.push(channel.key);
    return keys;
  }

  /** Called when a channel gets its first viewer here or loses its last. */
  onWatchedChanged: (() => void) | null = null;

  /** The seq the channel's next event gets (0 for a channel not kept). */
  historyEnd(key: string): number {
    return this.channels.get(key)?.history.endSeq ?? 0;
  }

  /** The channel's retained events numbered below `beforeSeq`, oldest first. */
  historyBefore(key: string, beforeSeq: number): TracedEvent[] {
    const history = this.channels.get(key)?.history;
    if (!history) return [];
    return history
      .entries()
      .filter((e) => e.seq < beforeSeq)
      .map((e) => e.item);
  }

  /** Of these events, those whose event_id the channel's history does not hold yet. */
  notInHistory(key: string, events: readonly TracedEvent[]): TracedEvent[] {
    const history = this.channels.get(key)?.history;
    if (!history || history.length === 0) return [...events];
    const ids = new Set(history.entries().map((e) => e.item.event_id));
    return events.filter((e) => !ids.has(e.event_id));
  }

  /** Called when a publisher connects or disconnects here (a cluster node tells the others at once). */
  onPublishersChanged: (() => void) | null = null;

  /** What every viewer is told about the live view across nodes (null: all well); re-announced to every channel. */
  setClusterNotice(notice: string | null): void {
    if (notice === this.clusterNotice) return;
    this.clusterNotice = notice;
    for (const channel of this.channels.values()) if (channel.subscribers.size > 0) this.announceStats(channel);
  }
}
