import { fullGC } from "bun:jsc";
import { join } from "node:path";
import type { Db } from "#db/client.ts";
import { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import { AlertScheduler } from "~/engines/alerts/alert-scheduler.ts";
import type { Broker } from "~/engines/cluster/broker.ts";
import { ClusterNode } from "~/engines/cluster/cluster-node.ts";
import { NodeCalls } from "~/engines/cluster/node-calls.ts";
import { Ingest, type StoredIds } from "~/engines/ingest/ingest.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { ClientLimits } from "~/engines/limits/client-limits.ts";
import { EventLogBudget } from "~/engines/limits/event-log-budget.ts";
import { ExportSlots, exportSlotsFor } from "~/engines/limits/export-slots.ts";
import { MemoryGuard } from "~/engines/limits/memory-guard.ts";
import { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import { defaultMaxSockets, SocketLimits } from "~/engines/limits/socket-limits.ts";
import { FilterAllowance } from "~/engines/live/filter-allowance.ts";
import { LiveHub } from "~/engines/live/hub.ts";
import { defaultLiveHubOptions, defaultSendBudget } from "~/engines/live/options.ts";
import { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { type AttachedStore, attachStore } from "~/engines/store/attach-store.ts";
import { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { parseChannelKey } from "~/lib/protocol/channel-key.ts";
import { brokerKeys } from "~/lib/protocol/cluster.ts";
import { readDescriptorLimit } from "~/lib/server/descriptor-limit.ts";
import { type Config, memoryShares } from "~/lib/server/env.ts";
import { createMailer, type Mailer } from "~/lib/server/mailer.ts";
import { findRevokedGrants } from "~/services/access/grants.ts";
import { evaluateAlertRules } from "~/services/alerts/evaluate-alert-rules.ts";
import { queryThroughWorkers } from "~/services/alerts/query-through-workers.ts";
import { sendAlertDeliveries } from "~/services/alerts/send-alert-deliveries.ts";
import { createStripe } from "~/services/billing/stripe-client.ts";
import type { ServiceContext } from "~/services/context.ts";
import { hasNamespaceExports, loadExportDestinations } from "~/services/otlp/export-destinations.ts";
import { serveForwardedReplay } from "~/services/replay/resend-request.ts";
import { loadRouteSettings } from "~/services/routes/load-route-settings.ts";
import { saveRouteFold } from "~/services/routes/save-route-fold.ts";
import { trimEventLog } from "~/services/telemetry/trim-event-log.ts";
import { linkStoreId } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";

export type RuntimeInput = {
  config: Config;
  db: Db;
  /** The namespace event store (DuckDB in DATA_DIR, or ClickHouse); absent: events are shown live but not kept. */
  store?: EventStore;
  now?: () => Date;
  /** Sign-in mail; default SMTP from SMTP_URL (none: links go to the server log). */
  mailer?: Mailer;
  /** A request's socket peer, for per-client limits; default Bun's server.requestIP (app.handle has no socket). */
  peerAddress?: (request: Request) => string | undefined;
  /** The broker joining this server to the other nodes of a cluster (BROKER_URL); absent: one process. */
  broker?: Broker;
  /** The process's open-file limit, for the default cap on WebSockets; default read from /proc. */
  descriptorLimit?: number;
  /** Whether this runtime is the process's server (`tapscope server`): it then keeps its memory within MEMORY_LIMIT. */
  isProcessServer?: boolean;
  /** What ingest makes of each event (all by default); a step is left out only where its cost is measured (bench:store). */
  ingestSteps?: { searchTexts?: boolean; routes?: boolean };
};

/**
 * Every long-lived object of a server, made once here and handed to `createApp(runtime)`. The event path:
 * publishers and INSERT tunnels → ingest (validates, rate-limits) → sinks → { live hub (fan-out to viewers),
 * store sink (batches) → worker routing → this store or an org's self-hosted worker }.
 */
export type Runtime = {
  config: Config;
  db: Db;
  now: () => Date;
  mailer: Mailer | undefined;
  /** What every service verb receives. */
  ctx: ServiceContext;
  /** Open sockets under the grants that authorised them: ending a token, session or membership closes them. */
  sockets: GrantedSockets;
  /** Where validated events go: the live hub and, with a store, the store sink. */
  sinks: EventSinks;
  /** Live fan-out to viewers, their filters and each link's recent history; also publisher presence. */
  hub: LiveHub;
  /** The publishers' and INSERT tunnels' way in: validation, per-namespace rate limit, acks. */
  ingest: Ingest;
  /** Each ingested event's route: a namespace's patterns, else its path's template under the namespace's guard. */
  routes: RouteTemplates;
  /** Evaluates the alert rules and sends their notifications, on the one node of a cluster that holds the alerts' lease. */
  alerts: AlertScheduler;
  /** Routes each org's inserts and queries to its worker: the in-process store, or a self-hosted `tapscope worker`. */
  workers: WorkerRegistry;
  /** Query tunnels created and not yet closed (ListOpenTunnels). */
  tunnels: OpenTunnels;
  /** Per-client budgets of the unauthenticated endpoints (and of invitation mails). */
  clientLimits: ClientLimits;
  /** Holds the pages' reports (event_log) within EVENT_LOG_MAX_BYTES. */
  eventLog: EventLogBudget;
  /** Open WebSockets per client address, per link (link pages) and in all. */
  socketLimits: SocketLimits;
  /** HAR exports running at once, per caller and in all (a share of MEMORY_LIMIT). */
  exportSlots: ExportSlots;
  /** For the process's server: collects the garbage that would take resident memory past MEMORY_LIMIT; null otherwise. */
  memoryGuard: MemoryGuard | null;
  /** Each org's publishers and their places under the plans' containers limit (taken at the publish upgrade). */
  orgPublishers: OrgPublishers;
  store: EventStore | undefined;
  /** The store sink (batches into the store through worker routing) and the retention job; null without a store. */
  attached: AttachedStore | null;
  /** With a broker: this node of the cluster (live fan-out, presence and rate limits shared with the other nodes). */
  cluster: ClusterNode | null;
  /**
   * OpenTelemetry trace export, one more sink: each namespace's events as spans to its collector (or the server-wide
   * one), batched from a bounded queue; what this node accepted, so each event once in a cluster.
   */
  otlp: OtlpExporter;
  /** The runs connected to this node that allow replays (`--allow-replay`), and the replays waiting for their answer. */
  replays: ReplayRuns;
  /** Starts what needs the network before the server listens (the cluster's subscriptions). */
  start: () => Promise<void>;
  /** Writes the events still batched and stops the timers; the store and database are the caller's to close. */
  close: () => Promise<void>;
};

export function createRuntime(input: RuntimeInput): Runtime {
  const { config, db, store, broker } = input;
  // The clock of record (tests give a fake one): expiries, tickets, rate limits, a cluster's presence. What paces work
  // against real time with timers (the live filter budgets, the store sink's flushes and retries, a publisher place
  // held while its socket opens) keeps the process's clock: a test's stopped clock would stop it.
  const now = input.now ?? (() => new Date());
  const nowMs = () => now().getTime();
  const mailer = input.mailer ?? createMailer(config);
  const sockets = new GrantedSockets({ findRevoked: (grants) => findRevokedGrants({ ctx, grants }) });
  const stripe = config.billing ? createStripe(config.billing) : undefined;
  // A socket ticket opens one socket in the whole cluster, whichever node it lands on.
  const spendTicketEverywhere = broker
    ? (nonce: string, expiresAtMs: number) => broker.claimOnce(brokerKeys.ticket(nonce), expiresAtMs - nowMs())
    : undefined;
  const ctx: ServiceContext = { db, config, now, mailer, sockets, stripe, spendTicketEverywhere };

  // With a broker this server is one node of a cluster (ADR 0021). Its calls to the other nodes come first: the worker
  // registry and open tunnels answer the others' calls from their constructors.
  const calls = broker ? new NodeCalls({ broker }) : null;
  const shares = memoryShares(config.memoryLimitBytes);
  const sinks = new EventSinks();
  const hubOptions = { ...defaultLiveHubOptions, totalHistoryBytes: shares.liveHistoryBytes };
  const hub = new LiveHub(hubOptions, {
    sendBudget: defaultSendBudget(hubOptions, shares.liveSendBytes),
    filterAllowance: new FilterAllowance(),
    // The node is made below, after the hub it feeds; the hub's changes reach it through these.
    cluster: broker
      ? { publishersChanged: () => cluster?.publishersChanged(), watchedChanged: () => cluster?.watchedChanged() }
      : undefined,
  });
  sinks.add(hub);
  // Which orgs a self-hosted worker serves (worker_orgs), so no node stores theirs while it is away.
  const workers = new WorkerRegistry({ db, local: store, now, statePath: join(config.dataDir, "worker-orgs.json"), cluster: calls });
  // A publisher sends again what was unanswered when its connection went (its node died): the store, shared by every
  // node, says which of those events are already in (ADR 0025). Links are stored only by a cluster.
  const storedIds: StoredIds | undefined = store
    ? (target, ids, fromMicros, toMicros) => {
        const ns = target.namespaceId ?? (broker && target.linkId ? linkStoreId(target.linkId) : null);
        return ns ? workers.storedEventIds(ns, ids, fromMicros, toMicros) : Promise.resolve(new Set());
      }
    : undefined;
  // A position the guard folds is kept, so a restarted node folds it from its first event (links are not kept).
  const routes = new RouteTemplates(
    {},
    {
      onFold: (key, prefix) => {
        const ref = parseChannelKey(key);
        if (ref?.kind === "namespace") void saveRouteFold({ ctx, namespaceId: ref.namespaceId, prefix });
      },
    },
  );
  // In a cluster every limiter records what it grants, for the other nodes to spend too.
  const steps = input.ingestSteps ?? {};
  const ingest = new Ingest(sinks, {
    rateLimit: config.ingestRateLimit,
    storedIds,
    now: nowMs,
    isShared: broker !== undefined,
    routes: steps.routes === false ? undefined : routes,
    makeSearchTexts: steps.searchTexts !== false,
  });
  const otlp = new OtlpExporter({
    config,
    loadDestinations: (namespaceIds) => loadExportDestinations({ ctx, namespaceIds }),
    hasNamespaceExports: () => hasNamespaceExports({ ctx }),
    maxQueuedBytes: shares.otlpQueueBytes,
  });
  sinks.add(otlp);
  const attached = store ? attachStore({ config, db, store: workers.route(), sinks, now, storeLinks: broker !== undefined }) : null;
  // In a cluster an org's publishers are one set in Redis, so a place is taken atomically whichever node is asked.
  const orgPublishers = new OrgPublishers({
    shared: broker
      ? {
          claim: (orgId, slotId, max, ttlMs) => broker.claimSlot(brokerKeys.publishers(orgId), slotId, max, ttlMs),
          hold: (orgId, slotIds, ttlMs) => broker.holdSlots(brokerKeys.publishers(orgId), slotIds, ttlMs),
          release: (orgId, slotId) => broker.releaseSlot(brokerKeys.publishers(orgId), slotId),
        }
      : undefined,
  });
  const clientLimits = new ClientLimits({ config, now, peerAddress: input.peerAddress, isShared: broker !== undefined });
  const eventLog = new EventLogBudget({
    maxBytes: config.eventLogMaxBytes,
    trim: () => trimEventLog({ db, maxBytes: config.eventLogMaxBytes }),
  });
  const descriptorLimit = input.descriptorLimit ?? readDescriptorLimit()?.soft ?? 1024;
  const socketLimits = new SocketLimits({
    maxSockets: config.maxWebSockets || defaultMaxSockets(descriptorLimit, shares.socketBytes),
    perAddress: config.webSocketsPerAddress,
    pingsPerLink: config.webSocketsPerLink,
  });
  const exportSlots = new ExportSlots(exportSlotsFor(shares.harExportBytes));
  const memoryGuard = input.isProcessServer
    ? new MemoryGuard({ budgetBytes: config.memoryLimitBytes }, { rss: () => process.memoryUsage.rss(), collect: fullGC })
    : null;
  // A Resend for a namespace whose run another node holds goes to that node (the cluster's presence says which).
  const replays = new ReplayRuns({ calls, onChange: () => cluster?.publishersChanged() });
  calls?.handle("replay", (order) => serveForwardedReplay({ replays, order }));
  const cluster =
    broker && calls
      ? new ClusterNode({ broker, calls, hub, ingest, orgPublishers, clientLimits, store, routes, replays, now: nowMs })
      : null;
  if (cluster) sinks.add(cluster);
  const tunnels = new OpenTunnels({ now: nowMs, cluster });
  const evaluateEveryMs = config.alertEvaluationSeconds * 1000;
  const alerts = new AlertScheduler({
    evaluateEveryMs,
    deliverEveryMs: Math.min(evaluateEveryMs, 5_000),
    holdLease: broker && calls ? (ttlMs) => broker.holdLease(brokerKeys.alerts, calls.nodeId, ttlMs) : undefined,
    evaluate: () => evaluateAlertRules({ ctx, query: queryThroughWorkers(workers) }),
    deliver: () => sendAlertDeliveries({ ctx }),
  });

  return {
    config,
    db,
    now,
    mailer,
    ctx,
    sockets,
    sinks,
    hub,
    ingest,
    routes,
    alerts,
    workers,
    tunnels,
    clientLimits,
    eventLog,
    socketLimits,
    exportSlots,
    memoryGuard,
    orgPublishers,
    store,
    attached,
    cluster,
    otlp,
    replays,
    start: async () => {
      routes.load(await loadRouteSettings({ ctx }));
      await cluster?.start();
      alerts.start();
      memoryGuard?.start();
    },
    close: async () => {
      alerts.stop();
      memoryGuard?.stop();
      cluster?.stop();
      orgPublishers.stop();
      await eventLog.settled();
      await attached?.close();
      await otlp.close();
      mailer?.close();
      broker?.close();
    },
  };
}
