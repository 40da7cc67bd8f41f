import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Ingest } from "~/engines/ingest/ingest.ts";
import type { EventSink, EventTarget } from "~/engines/ingest/sinks.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import type { LiveHub } from "~/engines/live/hub.ts";
import { errorMessage } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { log } from "~/lib/server/logger.ts";
import { linkStoreId } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";
import type { Broker } from "./broker.ts";

/** A broker message from another node, or null (and a log line) for one that is not JSON. */
function parseMessage<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    log.warn("cluster: a broker message is not JSON", { err: errorMessage(err) });
    return null;
  }
}

type ClientRateLimitLike = { spend(clients: Iterable<[string, number]>, global: number): void };

const channels = { live: "tapscope:live", presence: "tapscope:presence", limits: "tapscope:limits" } as const;

/** How often a node tells the others its publishers; a node not heard from for `presenceTtlMs` counts none. */
const presenceEveryMs = 1_000;
const presenceTtlMs = 5_000;
/**
 * How often a node tells the others what its rate limiters granted. The bound on a shared limit's error: each other
 * node may grant up to rate × (this interval + the broker's latency) before this node spends it (ADR 0021).
 */
export const limitsEveryMs = 200;

export const brokerDownNotice = "Live events from other server nodes are paused: the broker is unreachable";

type LiveMessage = { n: string; ns: string | null; l: string | null; e: TracedEvent[] };
/** A node's publishers by channel (c) and by org (o), and the channels it has viewers for (w). */
type PresenceMessage = { n: string; c: Array<[string, number]>; o: Array<[string, number]>; w?: string[] };
/** What a node's ingest limiters (l) and per-client limiters (c: per kind, by client, and the global count) granted. */
type LimitsMessage = {
  n: string;
  l: Record<string, Array<[string, number]>>;
  c?: Record<string, { k: Array<[string, number]>; g: number }>;
};
/** A request to one node (its own channel) and the answer back to the asking node's channel. */
type NodeMessage = { id: string; from: string; kind: string; body?: string; answer?: string; error?: string };

/** How long a request to another node (a worker's query through the node holding its socket) may take. */
const nodeRequestTimeoutMs = 35_000;
const nodeChannel = (nodeId: string) => `tapscope:node:${nodeId}`;

/**
 * One server node of a cluster (BROKER_URL set). The events this node accepts for a channel another node has viewers for
 * are published to the others, which hand them to their live hubs: a viewer on any node sees every node's publishers.
 * A node whose channel gets its first viewer asks the others for that channel's recent history (and from then on they
 * publish its events), so a late viewer anywhere is sent what every node kept. Publisher presence (the viewers' count and the plans' containers limit) and what each rate
 * limiter granted go round the same way, so limits hold per namespace and per org across nodes. The store needs
 * nothing of this: every node writes to the same ClickHouse cluster.
 */
export class ClusterNode implements EventSink {
  readonly nodeId = `${hostname()}-${randomUUID().slice(0, 8)}`;
  private readonly remotePresence = new Map<string, { at: number; channels: Map<string, number>; orgs: Map<string, number> }>();
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private presenceSoon: ReturnType<typeof setTimeout> | null = null;
  /** Events received from other nodes and handed to this node's hub. */
  received = 0;
  private readonly handlers = new Map<string, (body: string) => Promise<string>>();
  /** Channels other nodes have viewers for: by channel key, the interested nodes and when each last said so. */
  private readonly interest = new Map<string, Map<string, number>>();
  /** Per channel with interest: the first history seq published to the broker (what came before is sent on request). */
  private readonly publishFrom = new Map<string, number>();
  private watched = new Set<string>();
  /** Batches not published because no other node watches their channel. */
  skipped = 0;
  private readonly waiting = new Map<
    string,
    { resolve: (answer: string) => void; reject: (err: Error) => void; timer: ReturnType<typeof setTimeout> }
  >();
  private seq = 0;

  constructor(
    private readonly deps: {
      broker: Broker;
      hub: LiveHub;
      ingest: Ingest;
      orgPublishers: OrgPublishers;
      /** The unauthenticated endpoints' per-client budgets, shared like ingest's limits (absent: per node). */
      clientLimits?: ClientLimits;
      /** Where shared links' events are kept too (linkStoreId): a link's first viewer here reads them. */
      store?: EventStore;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async start(): Promise<void> {
    const { broker, hub, ingest } = this.deps;
    ingest.shareLimits();
    for (const limiter of Object.values(this.deps.clientLimits?.all ?? {})) limiter.shareConsumption();
    await broker.subscribe(channels.live, (text) => this.onLive(text));
    await broker.subscribe(channels.presence, (text) => this.onPresence(text));
    await broker.subscribe(channels.limits, (text) => this.onLimits(text));
    await broker.subscribe(nodeChannel(this.nodeId), (text) => this.onNodeMessage(text));
    hub.onPublishersChanged = () => this.announcePresenceSoon();
    hub.onWatchedChanged = () => this.watchedChanged();
    this.handle("history", async (body) => this.historyFor(body));
    broker.onStatus((connected) => {
      hub.setClusterNotice(connected ? null : brokerDownNotice);
      if (connected) this.announcePresence();
    });
    this.timers.push(
      setInterval(() => {
        this.announcePresence();
        this.applyPresence();
      }, presenceEveryMs),
      setInterval(() => this.shareLimits(), limitsEveryMs),
    );
    for (const t of this.timers) t.unref();
    this.announcePresence();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(new Error("the server is shutting down"));
    }
    this.waiting.clear();
    if (this.presenceSoon) clearTimeout(this.presenceSoon);
    this.deps.hub.onPublishersChanged = null;
    this.deps.hub.onWatchedChanged = null;
  }

  // ---- events ----

  /**
   * Published only when another node has viewers for the target's channel: ingest that nobody elsewhere watches costs
   * the broker nothing (bench/cluster). A node that gets its first viewer asks the others for the history it missed.
   */
  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    if (events.length === 0) return;
    const watched =
      (target.namespaceId !== null && this.interest.has(`ns:${target.namespaceId}`)) ||
      (target.linkId !== null && this.interest.has(`link:${target.linkId}`));
    if (!watched) {
      this.skipped++;
      return;
    }
    const message: LiveMessage = { n: this.nodeId, ns: target.namespaceId, l: target.linkId, e: events as TracedEvent[] };
    this.deps.broker.publish(channels.live, JSON.stringify(message));
  }

  private markInterest(key: string, node: string, at: number): void {
    let nodes = this.interest.get(key);
    if (!nodes) {
      nodes = new Map();
      this.interest.set(key, nodes);
      this.publishFrom.set(key, this.deps.hub.historyEnd(key));
    }
    nodes.set(node, at);
  }

  private dropInterest(key: string, node: string): void {
    const nodes = this.interest.get(key);
    if (!nodes?.delete(node) || nodes.size > 0) return;
    this.interest.delete(key);
    this.publishFrom.delete(key);
  }

  /** Another node's first viewer of a channel: from now on its events are published, and what came before is the answer. */
  private async historyFor(body: string): Promise<string> {
    const { key, node } = JSON.parse(body) as { key: string; node: string };
    if (typeof key !== "string" || typeof node !== "string") return "[]";
    this.markInterest(key, node, this.now());
    return JSON.stringify(this.deps.hub.historyBefore(key, this.publishFrom.get(key) ?? 0));
  }

  private watchedChanged(): void {
    this.announcePresenceSoon();
    const now = new Set(this.deps.hub.watchedChannels());
    for (const key of now) if (!this.watched.has(key)) this.fetchHistory(key);
    this.watched = now;
  }

  private fetchHistory(key: string): void {
    const sep = key.indexOf(":");
    const id = key.slice(sep + 1);
    const target: EventTarget = key.startsWith("ns:") ? { namespaceId: id, linkId: null } : { namespaceId: null, linkId: id };
    if (target.linkId && this.deps.store) void this.linkHistoryFromStore(key, target.linkId);
    for (const node of this.remotePresence.keys()) {
      this.request(node, "history", JSON.stringify({ key, node: this.nodeId })).then(
        (text) => {
          const events = JSON.parse(text) as TracedEvent[];
          if (Array.isArray(events) && events.length > 0) this.deps.hub.accept(target, this.deps.hub.notInHistory(key, events));
        },
        (err) => log.warn("cluster: could not fetch a channel's history", { node, err: errorMessage(err) }),
      );
    }
  }

  private onLive(text: string): void {
    const message = parseMessage<LiveMessage>(text);
    if (!message) return;
    if (message.n === this.nodeId || !Array.isArray(message.e)) return;
    this.received += message.e.length;
    this.deps.hub.accept({ namespaceId: message.ns ?? null, linkId: message.l ?? null }, message.e);
  }

  /** A link's recent events as the store kept them (every node writes them): what a node that died had is not lost. */
  private async linkHistoryFromStore(key: string, linkId: string): Promise<void> {
    const store = this.deps.store;
    if (!store) return;
    try {
      const nowMs = this.now();
      const page = await store.queryRows(linkStoreId(linkId), {
        filter: { clauses: [], global: { lowerMs: nowMs - 7 * 86_400_000, upperMs: nowMs + 60_000 } },
        limit: this.deps.hub.options.historySize,
      });
      const ids = new Set(page.data.map((r) => r.event_id));
      if (ids.size === 0) return;
      const events = await store.getEvents(linkStoreId(linkId), [...ids]);
      events.sort((a, b) => a.time - b.time);
      this.deps.hub.accept({ namespaceId: null, linkId }, this.deps.hub.notInHistory(key, events));
    } catch (err) {
      log.warn("cluster: could not read a link's events from the store", { err: errorMessage(err) });
    }
  }

  // ---- publishers ----

  private announcePresenceSoon(): void {
    this.presenceSoon ??= setTimeout(() => {
      this.presenceSoon = null;
      this.announcePresence();
    }, 20);
  }

  private announcePresence(): void {
    const message: PresenceMessage = {
      n: this.nodeId,
      c: [...this.deps.hub.localPublishers()],
      o: [...this.deps.orgPublishers.local()],
      w: this.deps.hub.watchedChannels(),
    };
    this.deps.broker.publish(channels.presence, JSON.stringify(message));
  }

  private onPresence(text: string): void {
    const message = parseMessage<PresenceMessage>(text);
    if (!message) return;
    if (message.n === this.nodeId || !Array.isArray(message.c) || !Array.isArray(message.o)) return;
    const now = this.now();
    this.remotePresence.set(message.n, { at: now, channels: new Map(message.c), orgs: new Map(message.o) });
    const watched = new Set(Array.isArray(message.w) ? message.w.filter((k) => typeof k === "string") : []);
    for (const key of watched) this.markInterest(key, message.n, now);
    for (const [key, nodes] of [...this.interest]) if (nodes.has(message.n) && !watched.has(key)) this.dropInterest(key, message.n);
    this.applyPresence();
  }

  /** The other nodes' publishers, summed over the nodes heard from lately (a killed node's count lapses). */
  private applyPresence(): void {
    const now = this.now();
    const channelCounts = new Map<string, number>();
    const orgCounts = new Map<string, number>();
    for (const [key, nodes] of [...this.interest])
      for (const [node, at] of nodes) if (now - at > presenceTtlMs) this.dropInterest(key, node);
    for (const [node, p] of this.remotePresence) {
      if (now - p.at > presenceTtlMs) {
        this.remotePresence.delete(node);
        continue;
      }
      for (const [k, n] of p.channels) channelCounts.set(k, (channelCounts.get(k) ?? 0) + n);
      for (const [k, n] of p.orgs) orgCounts.set(k, (orgCounts.get(k) ?? 0) + n);
    }
    this.deps.hub.setRemotePublishers(channelCounts);
    this.deps.orgPublishers.setRemote(orgCounts);
  }

  /** The other nodes heard from lately. */
  otherNodes(): string[] {
    return [...this.remotePresence.keys()];
  }

  get brokerConnected(): boolean {
    return this.deps.broker.isConnected;
  }

  /** Nodes heard from within the presence TTL, this one included. */
  get nodes(): number {
    return this.remotePresence.size + 1;
  }

  // ---- requests to one node ----

  /** What this node answers for `kind` when another node asks (the worker registry: queries for a worker held here). */
  handle(kind: string, handler: (body: string) => Promise<string>): void {
    this.handlers.set(kind, handler);
  }

  /** Asks node `nodeId` (its `kind` handler); rejects when the broker is away or the node does not answer in time. */
  request(nodeId: string, kind: string, body: string): Promise<string> {
    if (!this.deps.broker.isConnected) return Promise.reject(new Error("the broker is unreachable"));
    const id = `${this.nodeId}:${++this.seq}`;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error("the server node holding it did not answer in time"));
      }, nodeRequestTimeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
      this.deps.broker.publish(nodeChannel(nodeId), JSON.stringify({ id, from: this.nodeId, kind, body } satisfies NodeMessage));
    });
  }

  private onNodeMessage(text: string): void {
    const message = parseMessage<NodeMessage>(text);
    if (!message) return;
    if (typeof message.id !== "string" || typeof message.from !== "string") return;
    if (message.body === undefined) {
      const w = this.waiting.get(message.id);
      if (!w) return;
      this.waiting.delete(message.id);
      clearTimeout(w.timer);
      if (message.error !== undefined) w.reject(new Error(message.error));
      else w.resolve(message.answer ?? "");
      return;
    }
    const handler = this.handlers.get(message.kind);
    const reply = (fields: Pick<NodeMessage, "answer" | "error">) =>
      this.deps.broker.publish(
        nodeChannel(message.from),
        JSON.stringify({ id: message.id, from: this.nodeId, kind: message.kind, ...fields }),
      );
    if (!handler) {
      reply({ error: `no handler for ${message.kind}` });
      return;
    }
    handler(message.body).then(
      (answer) => reply({ answer }),
      (err) => reply({ error: errorMessage(err) }),
    );
  }

  // ---- limits ----

  private shareLimits(): void {
    const { ingest } = this.deps;
    const limits: LimitsMessage["l"] = {};
    let any = false;
    for (const name of ingest.limiterNames()) {
      const consumed = ingest.limiter(name)?.drainConsumed();
      if (!consumed || consumed.size === 0) continue;
      limits[name] = [...consumed];
      any = true;
    }
    const clients: NonNullable<LimitsMessage["c"]> = {};
    for (const [kind, limiter] of Object.entries(this.deps.clientLimits?.all ?? {})) {
      const { clients: byClient, global } = limiter.drainConsumed();
      if (global === 0 && byClient.size === 0) continue;
      clients[kind] = { k: [...byClient], g: global };
      any = true;
    }
    if (any) this.deps.broker.publish(channels.limits, JSON.stringify({ n: this.nodeId, l: limits, c: clients } satisfies LimitsMessage));
  }

  private onLimits(text: string): void {
    const message = parseMessage<LimitsMessage>(text);
    if (!message) return;
    if (message.n === this.nodeId || typeof message.l !== "object" || message.l === null) return;
    const now = this.now();
    for (const [name, entries] of Object.entries(message.l)) {
      const limiter = this.deps.ingest.limiter(name, true);
      if (!limiter || !Array.isArray(entries)) continue;
      for (const [key, n] of entries) if (typeof key === "string" && typeof n === "number") limiter.spend(key, n, now);
    }
    const all = this.deps.clientLimits?.all as Record<string, ClientRateLimitLike> | undefined;
    for (const [kind, consumed] of Object.entries(message.c ?? {})) {
      const limiter = all?.[kind];
      if (!limiter || !Array.isArray(consumed?.k)) continue;
      limiter.spend(
        consumed.k.filter(([k, n]) => typeof k === "string" && typeof n === "number"),
        Number(consumed.g) || 0,
      );
    }
  }
}
