import { join } from "node:path";
import type { Db } from "#db/client.ts";
import { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { Broker } from "~/engines/cluster/broker.ts";
import { ClusterNode } from "~/engines/cluster/cluster-node.ts";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { ClientLimits } from "~/engines/limits/client-limits.ts";
import { EventLogBudget } from "~/engines/limits/event-log-budget.ts";
import { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import { LiveHub } from "~/engines/live/hub.ts";
import { type AttachedStore, attachStore } from "~/engines/store/attach-store.ts";
import { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { type Config, memoryShares } from "~/lib/server/env.ts";
import { createMailer, type Mailer } from "~/lib/server/mailer.ts";
import { findRevokedGrants } from "~/services/access/grants.ts";
import { createStripe } from "~/services/billing/stripe-client.ts";
import type { ServiceContext } from "~/services/context.ts";
import { trimEventLog } from "~/services/telemetry/trim-event-log.ts";
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
  /** Routes each org's inserts and queries to its worker: the in-process store, or a self-hosted `tapscope worker`. */
  workers: WorkerRegistry;
  /** Query tunnels created and not yet closed (ListOpenTunnels). */
  tunnels: OpenTunnels;
  /** Per-client budgets of the unauthenticated endpoints (and of invitation mails). */
  clientLimits: ClientLimits;
  /** Holds the pages' reports (event_log) within EVENT_LOG_MAX_BYTES. */
  eventLog: EventLogBudget;
  /** Each org's publishers and their places under the plans' containers limit (taken at the publish upgrade). */
  orgPublishers: OrgPublishers;
  store: EventStore | undefined;
  /** The store sink (batches into the store through worker routing) and the retention job; null without a store. */
  attached: AttachedStore | null;
  /** With a broker: this node of the cluster (live fan-out, presence and rate limits shared with the other nodes). */
  cluster: ClusterNode | null;
  /** Starts what needs the network before the server listens (the cluster's subscriptions). */
  start: () => Promise<void>;
  /** Writes the events still batched and stops the timers; the store and database are the caller's to close. */
  close: () => Promise<void>;
};

export function createRuntime(input: RuntimeInput): Runtime {
  const { config, db, store } = input;
  const now = input.now ?? (() => new Date());
  const mailer = input.mailer ?? createMailer(config);
  const sockets = new GrantedSockets({ findRevoked: (grants) => findRevokedGrants({ ctx, grants }) });
  const stripe = config.billing ? createStripe(config.billing) : undefined;
  const broker = input.broker;
  // A socket ticket opens one socket in the whole cluster, whichever node it lands on.
  const spendTicketEverywhere = broker
    ? (nonce: string, expiresAtMs: number) => broker.claimOnce(`tapscope:ticket:${nonce}`, expiresAtMs - now().getTime())
    : undefined;
  const ctx: ServiceContext = { db, config, now, mailer, sockets, stripe, spendTicketEverywhere };

  const sinks = new EventSinks();
  const hub = new LiveHub({ totalHistoryBytes: memoryShares(config.memoryLimitBytes).liveHistoryBytes });
  sinks.add(hub);
  const ingest = new Ingest(sinks, { rateLimit: config.ingestRateLimit });
  // Which orgs a self-hosted worker serves (worker_orgs), so no node stores theirs while it is away.
  const workers = new WorkerRegistry({ db, local: store, now, statePath: join(config.dataDir, "worker-orgs.json") });
  const attached = store ? attachStore({ config, db, store: workers.route(), sinks, now, storeLinks: input.broker !== undefined }) : null;
  // In a cluster an org's publishers are one set in Redis, so a place is taken atomically whichever node is asked.
  const orgPublishers = new OrgPublishers({
    shared: broker
      ? {
          claim: (orgId, slotId, max, ttlMs) => broker.claimSlot(`tapscope:publishers:${orgId}`, slotId, max, ttlMs),
          hold: (orgId, slotIds, ttlMs) => broker.holdSlots(`tapscope:publishers:${orgId}`, slotIds, ttlMs),
          release: (orgId, slotId) => broker.releaseSlot(`tapscope:publishers:${orgId}`, slotId),
        }
      : undefined,
  });
  const clientLimits = new ClientLimits({ config, now, peerAddress: input.peerAddress });
  const eventLog = new EventLogBudget({
    maxBytes: config.eventLogMaxBytes,
    trim: () => trimEventLog({ db, maxBytes: config.eventLogMaxBytes }),
  });
  const cluster = input.broker ? new ClusterNode({ broker: input.broker, hub, ingest, orgPublishers, clientLimits, store }) : null;
  const tunnels = new OpenTunnels();
  if (cluster) {
    sinks.add(cluster);
    workers.joinCluster(cluster);
    tunnels.joinCluster(cluster);
  }

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
    workers,
    tunnels,
    clientLimits,
    eventLog,
    orgPublishers,
    store,
    attached,
    cluster,
    start: async () => {
      await cluster?.start();
    },
    close: async () => {
      cluster?.stop();
      orgPublishers.stop();
      await eventLog.settled();
      await attached?.close();
      mailer?.close();
      input.broker?.close();
    },
  };
}
