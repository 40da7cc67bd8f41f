import { compileFilter, type EventPredicate } from "~/lib/filter/evaluate.ts";
import { parseFilterChips } from "~/lib/filter/parse.ts";
import { estimateJsonLength, type TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveClientMessage, LiveServerMessage } from "~/lib/protocol/live.ts";
import type { EventSink, EventTarget } from "~/services/ingest/sink.ts";
import { EventHistory } from "./history.ts";

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
};

const retryDelayMs = 20;

type Channel = {
  key: string;
  subscribers: Set<Subscriber>;
  /** Subscribers by filters: each distinct filter set is evaluated once per event, however many share it. */
  groups: Map<string, { predicate: EventPredicate; members: Set<Subscriber> }>;
  publishers: number;
  history: EventHistory<TracedEvent>;
  lastWrite: number;
};

export type LiveStats = { numPublishers: number; numSubscribers: number };

/** One connected viewer. Created by LiveHub.subscribe; the socket layer forwards messages and close to it. */
export class Subscriber {
  revision = 0;
  predicate: EventPredicate = () => true;
  /** Equal for subscribers with the same filters: they can share one serialized batch. */
  configKey = "[]";
  /** Serialized matching events not yet sent, oldest first. */
  pending: string[] = [];
  droppedTotal = 0;
  droppedUnreported = 0;
  /** A history is owed for the current config but the socket is full: sent when it drains (only the latest). */
  isHistoryOwed = false;
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
  /**
   * Batches built in this flush round, by config: viewers with the same filters were sent the same events, so
   * the message is built once and sent to each (checked: same length, same first and last event).
   */
  private batchCache = new Map<string, { length: number; first: string; last: string; text: string }>();
  readonly options: LiveHubOptions;

  constructor(options: Partial<LiveHubOptions> = {}) {
    this.options = { ...defaultLiveHubOptions, ...options };
  }

  // ---- publishers ----

  /** For the publisher socket: a publisher for this target connected. */
  publisherConnected(target: EventTarget): void {
    for (const key of targetKeys(target)) {
      const channel = this.channel(key);
      channel.publishers++;
      this.announceStats(channel);
    }
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
          if (!group.predicate(event)) continue;
          const json = (jsons[i] ??= JSON.stringify(event));
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
    this.sendHistory(sub);
    return sub;
  }

  unsubscribe(sub: Subscriber): void {
    if (sub.isClosed) return;
    sub.isClosed = true;
    sub.pending = [];
    this.dirty.delete(sub);
    this.retry.delete(sub);
    sub.channel.subscribers.delete(sub);
    this.leaveGroup(sub);
    this.announceStats(sub.channel);
    this.forgetIfUnused(sub.channel);
  }

  applyConfig(sub: Subscriber, message: LiveClientMessage): void {
    if (sub.isClosed) return;
    const parsed = parseFilterChips(message.filters);
    if (!parsed.ok) {
      this.sendControl(sub, { type: "setFilterError", revision: message.revision, ...parsed.error });
      return;
    }
    this.leaveGroup(sub);
    sub.predicate = compileFilter(parsed.expr);
    sub.configKey = JSON.stringify(message.filters);
    this.joinGroup(sub);
    sub.revision = message.revision;
    // Everything waiting is also in the history, which is resent under the new filters.
    sub.pending = [];
    this.dirty.delete(sub);
    this.sendControl(sub, { type: "config-applied", revision: message.revision });
    // A viewer that changes filters faster than it reads gets one history, for its latest config.
    if (sub.transport.bufferedAmount() > this.options.maxBufferedBytes) {
      sub.isHistoryOwed = true;
      this.retryLater(sub);
    } else {
      this.sendHistory(sub);
    }
  }

  stats(ref: ChannelRef): LiveStats {
    const channel = this.channels.get(channelKey(ref));
    return { numPublishers: channel?.publishers ?? 0, numSubscribers: channel?.subscribers.size ?? 0 };
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
      group = { predicate: sub.predicate, members: new Set() };
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
    if (channel.subscribers.size === 0 && channel.publishers === 0 && channel.history.length === 0) {
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
    if (sub.isHistoryOwed) {
      // The history covers everything that waited (pending was cleared when the config changed).
      sub.isHistoryOwed = false;
      sub.pending = [];
      this.sendHistory(sub);
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

  private sendHistory(sub: Subscriber): void {
    const parts: string[] = [];
    for (const { item, json } of sub.channel.history.entries()) {
      if (sub.predicate(item)) parts.push(json());
    }
    sub.transport.send(`{"type":"history","revision":${sub.revision},"events":[${parts.join(",")}]}`);
  }

  private sendControl(sub: Subscriber, message: LiveServerMessage): void {
    sub.transport.send(JSON.stringify(message));
  }

  private announceStats(channel: Channel): void {
    const message = JSON.stringify({
      type: "stats",
      numPublishers: channel.publishers,
      numSubscribers: channel.subscribers.size,
    } satisfies LiveServerMessage);
    for (const sub of channel.subscribers) sub.transport.send(message);
  }
}
