import type { Ingest } from "~/engines/ingest/ingest.ts";
import type { EventSink, EventTarget } from "~/engines/ingest/sinks.ts";
import type { ClientLimitKind, ClientLimits } from "~/engines/limits/client-limits.ts";
import type { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import type { LiveClusterHooks, LiveHub } from "~/engines/live/hub.ts";
import type { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import type { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { errorMessage } from "~/lib/errors.ts";
import { type ChannelKey, channelKeysOf, parseChannelKey, targetOf } from "~/lib/protocol/channel-key.ts";
import {
  type BrokerMessage,
  type BrokerMessageKind,
  brokerChannels,
  decodeBrokerMessage,
  encodeBrokerMessage,
} from "~/lib/protocol/cluster.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type PendingRequest, validatePendingRequest } from "~/lib/protocol/pending.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { log } from "~/lib/server/logger.ts";
import { linkStoreId } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";
import type { Broker } from "./broker.ts";
import type { NodeCalls } from "./node-calls.ts";

/** How often a node tells the others its publishers; a node not heard from for `presenceTtlMs` counts none. */
const presenceEveryMs = 1_000;
const presenceTtlMs = 5_000;
/**
 * How often a node tells the others what its rate limiters granted. The bound on a shared limit's error: each other
 * node may grant up to rate × (this interval + the broker's latency) before this node spends it (ADR 0021).
 */
export const limitsEveryMs = 200;

/** How often a node tells the others the route names it counted: a position folds everywhere within about this. */
const routesEveryMs = 500;

export const brokerDownNotice = "Live events from other server nodes are paused: the broker is unreachable";

export type ClusterNodeDeps = {
  broker: Broker;
  /** This node's name and its calls to the others (made first: the worker registry and open tunnels answer through it). */
  calls: NodeCalls;
  hub: LiveHub;
  /** Made with isShared: its limiters record what they grant. */
  ingest: Ingest;
  orgPublishers: OrgPublishers;
  /** The unauthenticated endpoints' per-client budgets, made with isShared like ingest's limits (absent: per node). */
  clientLimits?: ClientLimits;
  /** Where shared links' events are kept too (linkStoreId): a link's first viewer here reads them. */
  store?: EventStore;
  /** Ingest's route guard: what each node counts and folds is told to the others, so all fold alike. */
  routes?: RouteTemplates;
  /** The runs here that serve replays: their namespaces go out with presence, the others' come back (absent: none). */
  replays?: Pick<ReplayRuns, "localNamespaces" | "setRemote" | "dropRemote">;
  /** The runtime's clock (ms): presence and interest lapse by it. */
  now: () => number;
};

/**
 * One server node of a cluster (BROKER_URL set). The events this node accepts for a channel another node has viewers for
 * are published to the others, which hand them to their live hubs: a viewer on any node sees every node's publishers.
 * A node whose channel gets its first viewer asks the others for that channel's recent history (and from then on they
 * publish its events), so a late viewer anywhere is sent what every node kept. Publisher presence (the viewers' count
 * and the plans' containers limit) and what each rate limiter granted go round the same way, so limits hold per
 * namespace and per org across nodes. The store needs nothing of this: every node writes to the same ClickHouse
 * cluster. Every message is checked where it arrives (lib/protocol/cluster.ts); one that fails is dropped and counted.
 *
 * The hub calls it through LiveClusterHooks (given to the hub's constructor by the runtime).
 */
export class ClusterNode implements EventSink, LiveClusterHooks {
  private readonly remotePresence = new Map<string, { at: number; channels: Map<ChannelKey, number>; orgs: Map<string, number> }>();
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private presenceSoon: ReturnType<typeof setTimeout> | null = null;
  /** Events received from other nodes and handed to this node's hub. */
  received = 0;
  /** Channels other nodes have viewers for: by channel key, the interested nodes and when each last said so. */
  private readonly interest = new Map<ChannelKey, Map<string, number>>();
  /** Per channel with interest: the first history seq published to the broker (what came before is sent on request). */
  private readonly publishFrom = new Map<ChannelKey, number>();
  private watched = new Set<ChannelKey>();
  /** Batches not published because no other node watches their channel. */
  skipped = 0;
  private isStopped = false;

  constructor(private readonly deps: ClusterNodeDeps) {
    deps.calls.handle("history", async (body) => this.historyFor(body.key, body.node));
  }

  get nodeId(): string {
    return this.deps.calls.nodeId;
  }

  /** Calls to one other node (what the engines that answer or ask register and send). */
  get calls(): NodeCalls {
    return this.deps.calls;
  }

  /** Messages from other nodes refused at the edge, by what they were (RefusedMessages.total). */
  get refused(): NodeCalls["refused"] {
    return this.deps.calls.refused;
  }

  async start(): Promise<void> {
    const { broker, hub } = this.deps;
    await broker.subscribe(brokerChannels.live, (text) => this.receive("live", text, (m) => this.onLive(m)));
    await broker.subscribe(brokerChannels.presence, (text) => this.receive("presence", text, (m) => this.onPresence(m)));
    await broker.subscribe(brokerChannels.limits, (text) => this.receive("limits", text, (m) => this.onLimits(m)));
    if (this.deps.routes) await broker.subscribe(brokerChannels.routes, (text) => this.receive("routes", text, (m) => this.onRoutes(m)));
    await this.deps.calls.start();
    broker.onStatus((connected) => {
      if (this.isStopped) return;
      hub.setClusterNotice(connected ? null : brokerDownNotice);
      if (connected) this.announcePresence();
    });
    this.timers.push(
      setInterval(() => {
        this.announcePresence();
        this.applyPresence();
      }, presenceEveryMs),
      setInterval(() => this.shareLimits(), limitsEveryMs),
      setInterval(() => this.shareRoutes(), routesEveryMs),
    );
    for (const t of this.timers) t.unref();
    this.announcePresence();
  }

  stop(): void {
    this.isStopped = true;
    for (const t of this.timers) clearInterval(t);
    this.deps.calls.stop();
    if (this.presenceSoon) clearTimeout(this.presenceSoon);
    this.presenceSoon = null;
  }

  /** A broker message of channel `kind`, checked, then handled; one that fails is counted and dropped. */
  private receive<K extends BrokerMessageKind>(kind: K, text: string, handle: (message: BrokerMessage<K>) => void): void {
    const decoded = decodeBrokerMessage(kind, text);
    if (!decoded.ok) {
      this.refused.count(kind, decoded.error);
      return;
    }
    handle(decoded.value);
  }

  /** Events another node sent, through the publish validator as ingest's are; those that fail are counted and dropped. */
  private checkedEvents(what: string, raw: readonly unknown[]): TracedEvent[] {
    const events: TracedEvent[] = [];
    let firstError: string | null = null;
    for (const value of raw) {
      const result = validateEvent(value);
      if (result.ok) events.push(result.event);
      else firstError ??= result.error;
    }
    if (firstError !== null) this.refused.count(`${what} events`, firstError, raw.length - events.length);
    return events;
  }

  // ---- events ----

  /**
   * Published only when another node has viewers for the target's channel: ingest that nobody elsewhere watches costs
   * the broker nothing (bench/cluster). A node that gets its first viewer asks the others for the history it missed.
   */
  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    if (events.length === 0) return;
    if (!channelKeysOf(target).some((key) => this.interest.has(key))) {
      this.skipped++;
      return;
    }
    this.deps.broker.publish(
      brokerChannels.live,
      encodeBrokerMessage("live", { n: this.nodeId, ns: target.namespaceId, l: target.linkId, e: events as TracedEvent[] }),
    );
  }

  /** Requests in flight go where events go: to the nodes with viewers for the channel, never to a store. */
  showPending(target: EventTarget, requests: readonly PendingRequest[]): void {
    if (requests.length === 0 || !channelKeysOf(target).some((key) => this.interest.has(key))) return;
    this.deps.broker.publish(
      brokerChannels.live,
      encodeBrokerMessage("live", { n: this.nodeId, ns: target.namespaceId, l: target.linkId, e: [], p: requests as PendingRequest[] }),
    );
  }

  private markInterest(key: ChannelKey, node: string, at: number): void {
    let nodes = this.interest.get(key);
    if (!nodes) {
      nodes = new Map();
      this.interest.set(key, nodes);
      this.publishFrom.set(key, this.deps.hub.historyEnd(key));
    }
    nodes.set(node, at);
  }

  private dropInterest(key: ChannelKey, node: string): void {
    const nodes = this.interest.get(key);
    if (!nodes?.delete(node) || nodes.size > 0) return;
    this.interest.delete(key);
    this.publishFrom.delete(key);
  }

  /** Another node's first viewer of a channel: from now on its events are published, and what came before is the answer. */
  private historyFor(key: ChannelKey, node: string): TracedEvent[] {
    this.markInterest(key, node, this.deps.now());
    return this.deps.hub.historyBefore(key, this.publishFrom.get(key) ?? 0);
  }

  /** A channel got its first viewer here or lost its last (LiveClusterHooks). */
  watchedChanged(): void {
    if (this.isStopped) return;
    this.announcePresenceSoon();
    const now = new Set(this.deps.hub.watchedChannels());
    for (const key of now) if (!this.watched.has(key)) this.fetchHistory(key);
    this.watched = now;
  }

  private fetchHistory(key: ChannelKey): void {
    const ref = parseChannelKey(key);
    if (!ref) return;
    const target = targetOf(ref);
    if (ref.kind === "link" && this.deps.store) void this.linkHistoryFromStore(key, ref.linkId);
    for (const node of this.remotePresence.keys()) {
      this.deps.calls.request(node, "history", { key, node: this.nodeId }).then(
        (raw) => {
          const events = this.checkedEvents("history", raw);
          if (events.length > 0) this.deps.hub.accept(target, this.deps.hub.notInHistory(key, events));
        },
        (err) => log.warn("cluster: could not fetch a channel's history", { node, err: errorMessage(err) }),
      );
    }
  }

  private onLive(message: BrokerMessage<"live">): void {
    if (message.n === this.nodeId) return;
    if (message.p) {
      const requests = message.p.map(validatePendingRequest).filter((r): r is PendingRequest => r !== null);
      if (requests.length < message.p.length)
        this.refused.count("live pending requests", "not a pending request", message.p.length - requests.length);
      this.deps.hub.showPending({ namespaceId: message.ns, linkId: message.l }, requests);
    }
    if (message.e.length === 0) return;
    const events = this.checkedEvents("live", message.e);
    this.received += events.length;
    this.deps.hub.accept({ namespaceId: message.ns, linkId: message.l }, events);
  }

  /** A link's recent events as the store kept them (every node writes them): what a node that died had is not lost. */
  private async linkHistoryFromStore(key: ChannelKey, linkId: string): Promise<void> {
    const store = this.deps.store;
    if (!store) return;
    try {
      const nowMs = this.deps.now();
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

  /** A publisher connected here or disconnected (LiveClusterHooks): the others are told at once. */
  publishersChanged(): void {
    if (this.isStopped) return;
    this.announcePresenceSoon();
  }

  private announcePresenceSoon(): void {
    this.presenceSoon ??= setTimeout(() => {
      this.presenceSoon = null;
      this.announcePresence();
    }, 20);
  }

  private announcePresence(): void {
    const { broker, hub, orgPublishers, replays } = this.deps;
    broker.publish(
      brokerChannels.presence,
      encodeBrokerMessage("presence", {
        n: this.nodeId,
        c: [...hub.localPublishers()],
        o: [...orgPublishers.local()],
        w: hub.watchedChannels(),
        r: replays?.localNamespaces(),
      }),
    );
  }

  private onPresence(message: BrokerMessage<"presence">): void {
    if (message.n === this.nodeId) return;
    const now = this.deps.now();
    this.remotePresence.set(message.n, { at: now, channels: new Map(message.c), orgs: new Map(message.o) });
    this.deps.replays?.setRemote(message.n, message.r ?? []);
    const watched = new Set(message.w ?? []);
    for (const key of watched) this.markInterest(key, message.n, now);
    for (const [key, nodes] of [...this.interest]) if (nodes.has(message.n) && !watched.has(key)) this.dropInterest(key, message.n);
    this.applyPresence();
  }

  /** The other nodes' publishers, summed over the nodes heard from lately (a killed node's count lapses). */
  private applyPresence(): void {
    const now = this.deps.now();
    const channelCounts = new Map<ChannelKey, number>();
    const orgCounts = new Map<string, number>();
    for (const [key, nodes] of [...this.interest])
      for (const [node, at] of nodes) if (now - at > presenceTtlMs) this.dropInterest(key, node);
    for (const [node, p] of this.remotePresence) {
      if (now - p.at > presenceTtlMs) {
        this.remotePresence.delete(node);
        this.deps.replays?.dropRemote(node);
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

  // ---- routes ----

  private shareRoutes(): void {
    const shared = this.deps.routes?.takeShared();
    if (!shared) return;
    this.deps.broker.publish(
      brokerChannels.routes,
      encodeBrokerMessage("routes", { n: this.nodeId, f: shared.folds, v: shared.names, p: shared.patterns }),
    );
  }

  private onRoutes(message: BrokerMessage<"routes">): void {
    if (message.n === this.nodeId) return;
    this.deps.routes?.merge({ folds: message.f, names: message.v, patterns: message.p });
  }

  // ---- limits ----

  private shareLimits(): void {
    const { ingest } = this.deps;
    const limits: BrokerMessage<"limits">["l"] = {};
    let any = false;
    for (const name of ingest.limiterNames()) {
      const consumed = ingest.limiter(name)?.drainConsumed();
      if (!consumed || consumed.size === 0) continue;
      limits[name] = [...consumed];
      any = true;
    }
    const clients: NonNullable<BrokerMessage<"limits">["c"]> = {};
    for (const [kind, limiter] of Object.entries(this.deps.clientLimits?.all ?? {})) {
      const { clients: byClient, global } = limiter.drainConsumed();
      if (global === 0 && byClient.size === 0) continue;
      clients[kind] = { k: [...byClient], g: global };
      any = true;
    }
    if (any) this.deps.broker.publish(brokerChannels.limits, encodeBrokerMessage("limits", { n: this.nodeId, l: limits, c: clients }));
  }

  private onLimits(message: BrokerMessage<"limits">): void {
    if (message.n === this.nodeId) return;
    const now = this.deps.now();
    for (const [name, entries] of Object.entries(message.l)) {
      const limiter = this.deps.ingest.limiter(name, true);
      if (!limiter) continue;
      for (const [key, n] of entries) limiter.spend(key, n, now);
    }
    const all = this.deps.clientLimits?.all;
    if (!all) return;
    for (const [kind, consumed] of Object.entries(message.c ?? {})) {
      if (!Object.hasOwn(all, kind)) {
        this.refused.count("limits", `no client limit named ${kind}`);
        continue;
      }
      all[kind as ClientLimitKind].spend(consumed.k, consumed.g);
    }
  }
}
