import { existsSync, readFileSync, renameSync } from "node:fs";
import { and, eq } from "drizzle-orm";
import type { Db } from "#db/client.ts";
import { namespaces, workerOrgs } from "#db/schema/index.ts";
import type { NodeCalls } from "~/engines/cluster/node-calls.ts";
import { AppError, errorMessage } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import {
  decodeResult,
  decodeResultData,
  encodeRequest,
  encodeResult,
  errorResult,
  relabelResult,
  type TunnelRequest,
  type TunnelRole,
} from "~/lib/protocol/tunnel.ts";
import { log } from "~/lib/server/logger.ts";
import { executeRequest, isAllowedFor } from "~/services/tunnel/execute-request.ts";
import { markWorkerSeen } from "~/services/tunnel/mark-worker-seen.ts";
import { type EventRows, eventsOfRows } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";

/** What the registry needs of a worker's socket. */
export type WorkerSocket = {
  send(bytes: Uint8Array): void;
  close(code?: number, reason?: string): void;
};

type Pending = {
  resolve: (frame: Uint8Array) => void;
  timer: ReturnType<typeof setTimeout>;
};

const REMOTE_TIMEOUT_MS = 30_000;
/** lastSeenWorkerTime is written at most this often per org. */
const SEEN_EVERY_MS = 60_000;

/** One connected self-hosted worker (`tapscope worker`): requests out, results back, matched by id. */
export class RemoteWorker {
  private readonly pending = new Map<string, Pending>();
  private seq = 0;

  constructor(
    readonly orgId: string,
    readonly socket: WorkerSocket,
  ) {}

  /** Sends a request for a namespace and resolves with the worker's result frame (never rejects). */
  async request(request: TunnelRequest): Promise<Uint8Array> {
    const id = `w${++this.seq}`;
    const frame = await encodeRequest({ ...request, queryId: id }, request.want.kind === "insert" ? "gzip" : "none");
    return new Promise<Uint8Array>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(
          encodeResult(
            errorResult(id, {
              tunnelError: "the worker did not answer in time",
            }),
          ),
        );
      }, REMOTE_TIMEOUT_MS);
      this.pending.set(id, { resolve, timer });
      try {
        this.socket.send(frame);
      } catch {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(encodeResult(errorResult(id, { tunnelError: "the worker is not connected" })));
      }
    });
  }

  /** A result frame from the worker. */
  received(frame: Uint8Array): void {
    let id: string;
    try {
      id = decodeResult(frame).queryId;
    } catch (err) {
      log.warn("worker sent a bad frame", {
        orgId: this.orgId,
        err: errorMessage(err),
      });
      return;
    }
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(frame);
  }

  closed(): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve(encodeResult(errorResult(id, { tunnelError: "the worker disconnected" })));
    }
    this.pending.clear();
  }
}

/** How long an org's worker row is believed before it is read again (a worker moving between nodes is seen by then). */
const WORKER_ROW_TTL_MS = 1_000;

/**
 * Where each org's events live: the server's own store (the in-process worker, the default) or the org's
 * connected self-hosted worker. Ingest (through route()) and queries (through dispatch()) both ask here,
 * so an org with a worker has no event data on the server. Which orgs have a worker, and which server node holds its
 * socket, is in PostgreSQL (worker_orgs): in a cluster, a node without the socket forwards to the node with it.
 */
export class WorkerRegistry {
  private readonly remote = new Map<string, RemoteWorker>();
  /** worker_orgs rows as last read: the node holding the socket (null: away), or null for an org without a worker. */
  private readonly rows = new Map<string, { row: { nodeId: string | null } | null; at: number }>();
  private readonly orgOfNamespace = new Map<string, string>();
  private readonly seenAt = new Map<string, number>();
  private readonly ready: Promise<void>;

  constructor(
    private readonly deps: {
      db: Db;
      local: EventStore | undefined;
      now?: () => Date;
      /** The list of orgs with workers that servers before worker_orgs kept (DATA_DIR/worker-orgs.json): imported once. */
      statePath?: string;
      /** With a broker: this node's calls to the others, so workers held by other nodes are reached through them. */
      cluster?: NodeCalls | null;
    },
  ) {
    this.ready = this.importLegacyList().catch((err) =>
      log.error("could not import the orgs with self-hosted workers", { err: errorMessage(err) }),
    );
    deps.cluster?.handle("worker", async ({ orgId, request }) => {
      const remote = this.remote.get(orgId);
      const frame = remote
        ? await remote.request(request)
        : encodeResult(errorResult(request.queryId, { tunnelError: "the org's worker is not connected" }));
      return Buffer.from(frame).toString("base64");
    });
  }

  private async importLegacyList(): Promise<void> {
    const path = this.deps.statePath;
    const orgIds = readOrgList(path);
    if (orgIds.length > 0)
      await this.deps.db
        .insert(workerOrgs)
        .values(orgIds.map((orgId) => ({ orgId })))
        .onConflictDoNothing();
    if (path && existsSync(path)) renameSync(path, `${path}.imported`);
  }

  private get nodeId(): string {
    return this.deps.cluster?.nodeId ?? "local";
  }

  /** The org's worker row (cached for a second): null when the org has no self-hosted worker. */
  private async workerRow(orgId: string): Promise<{ nodeId: string | null } | null> {
    await this.ready;
    const cached = this.rows.get(orgId);
    const nowMs = this.now().getTime();
    if (cached && nowMs - cached.at < WORKER_ROW_TTL_MS) return cached.row;
    const [row] = await this.deps.db.select({ nodeId: workerOrgs.nodeId }).from(workerOrgs).where(eq(workerOrgs.orgId, orgId)).limit(1);
    if (this.rows.size > 100_000) this.rows.clear();
    this.rows.set(orgId, { row: row ?? null, at: nowMs });
    return row ?? null;
  }

  private record(orgId: string, write: () => Promise<unknown>, row: { nodeId: string | null } | null): void {
    this.rows.set(orgId, { row, at: this.now().getTime() });
    this.ready.then(write).catch((err) => log.error("could not record the org's self-hosted worker", { orgId, err: errorMessage(err) }));
  }

  /** The org's events go back to the server's own store (its worker token was deleted). */
  forget(orgId: string): void {
    this.record(orgId, () => this.deps.db.delete(workerOrgs).where(eq(workerOrgs.orgId, orgId)), null);
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  async orgOf(namespaceId: string): Promise<string | null> {
    const cached = this.orgOfNamespace.get(namespaceId);
    if (cached) return cached;
    const [row] = await this.deps.db.select({ orgId: namespaces.orgId }).from(namespaces).where(eq(namespaces.id, namespaceId)).limit(1);
    if (!row) return null;
    if (this.orgOfNamespace.size > 100_000) this.orgOfNamespace.clear();
    this.orgOfNamespace.set(namespaceId, row.orgId);
    return row.orgId;
  }

  /** Records the org's worker as seen (throttled); force for connects and heartbeats. */
  seen(orgId: string, force = false): void {
    const nowMs = this.now().getTime();
    if (!force && (this.seenAt.get(orgId) ?? 0) + SEEN_EVERY_MS > nowMs) return;
    this.seenAt.set(orgId, nowMs);
    markWorkerSeen({ db: this.deps.db, orgId, now: this.now() }).catch((err) =>
      log.warn("could not record worker seen", { orgId, err: errorMessage(err) }),
    );
  }

  /**
   * A program of the org connected to publish. When the org's events are stored here (no self-hosted worker), this
   * server's store is its worker and can be searched from now: recorded as seen, so the dashboard offers Requests
   * before the first event is written.
   */
  async publisherConnected(orgId: string): Promise<void> {
    if (!this.deps.local || this.remote.has(orgId) || (await this.workerRow(orgId))) return;
    this.seen(orgId);
  }

  connect(orgId: string, socket: WorkerSocket): RemoteWorker {
    const previous = this.remote.get(orgId);
    const worker = new RemoteWorker(orgId, socket);
    this.remote.set(orgId, worker);
    const nodeId = this.nodeId;
    const connectedAt = this.now();
    this.record(
      orgId,
      () =>
        this.deps.db
          .insert(workerOrgs)
          .values({ orgId, nodeId, connectedAt })
          .onConflictDoUpdate({ target: workerOrgs.orgId, set: { nodeId, connectedAt } }),
      { nodeId },
    );
    this.seen(orgId, true);
    if (previous) {
      // One worker per org: the newest connection wins (a restarted worker replaces its stale socket).
      previous.closed();
      try {
        previous.socket.close(4409, "replaced by a newer worker");
      } catch {}
    }
    log.info("worker connected", { orgId });
    return worker;
  }

  disconnect(worker: RemoteWorker): void {
    worker.closed();
    if (this.remote.get(worker.orgId) === worker) {
      this.remote.delete(worker.orgId);
      const nodeId = this.nodeId;
      // Only this node's claim is cleared: the worker may already have reconnected through another node.
      this.record(
        worker.orgId,
        () =>
          this.deps.db
            .update(workerOrgs)
            .set({ nodeId: null })
            .where(and(eq(workerOrgs.orgId, worker.orgId), eq(workerOrgs.nodeId, nodeId))),
        { nodeId: null },
      );
    }
    log.info("worker disconnected", { orgId: worker.orgId });
  }

  hasRemote(orgId: string): boolean {
    return this.remote.has(orgId);
  }

  /**
   * Runs a validated request for a namespace on the org's worker. The result frame is returned under the
   * request's own query id. The namespace is the caller's binding; the message's tags are overwritten.
   */
  async dispatch({
    namespaceId,
    orgId,
    role,
    request,
  }: {
    namespaceId: string;
    orgId: string;
    role: TunnelRole;
    request: TunnelRequest;
  }): Promise<Uint8Array> {
    const bound: TunnelRequest = { ...request, tags: { namespaceId, orgId } };
    const remote = this.remote.get(orgId);
    const row = remote ? null : await this.workerRow(orgId);
    if (remote || row) {
      if (!isAllowedFor(role, request.want.kind)) {
        return encodeResult(
          errorResult(request.queryId, {
            tunnelError: `${role} tunnels cannot send "${String(request.want.kind)}" requests`,
          }),
        );
      }
      const frame = remote ? await remote.request(bound) : await this.forward(orgId, row?.nodeId ?? null, bound);
      return relabelResult(frame, request.queryId);
    }
    if (!this.deps.local)
      return encodeResult(
        errorResult(request.queryId, {
          tunnelError: "this server keeps no events",
        }),
      );
    this.seen(orgId);
    return encodeResult(
      await executeRequest({
        store: this.deps.local,
        namespaceId,
        role,
        request: bound,
      }),
    );
  }

  /** Inserts for ingest: to the org's worker when it has one, else the local store. */
  insert(namespaceId: string, events: readonly TracedEvent[]): Promise<void> {
    return this.insertTo(namespaceId, { events });
  }

  /** The same for events in their stored form (what the store sink holds). */
  insertRows(namespaceId: string, rows: readonly EventRows[]): Promise<void> {
    return this.insertTo(namespaceId, { rows });
  }

  /** A request for a worker whose socket another node of the cluster holds: sent there through the broker. */
  private async forward(orgId: string, nodeId: string | null, request: TunnelRequest): Promise<Uint8Array> {
    const away = (why: string) => encodeResult(errorResult(request.queryId, { tunnelError: why }));
    const cluster = this.deps.cluster;
    if (!nodeId || nodeId === this.nodeId || !cluster) return away("the org's worker is not connected");
    try {
      const answer = await cluster.request(nodeId, "worker", { orgId, request });
      return new Uint8Array(Buffer.from(answer, "base64"));
    } catch (err) {
      return away(`the org's worker could not be reached: ${errorMessage(err)}`);
    }
  }

  private async insertTo(namespaceId: string, what: { events: readonly TracedEvent[] } | { rows: readonly EventRows[] }): Promise<void> {
    const orgId = await this.orgOf(namespaceId);
    const local = orgId ? this.remote.get(orgId) : undefined;
    const row = orgId && !local ? await this.workerRow(orgId) : null;
    const remote = local ?? (orgId && row ? { request: (r: TunnelRequest) => this.forward(orgId, row.nodeId, r) } : undefined);
    if (orgId && remote) {
      // A worker's insert frame carries events as JSON (so the sink's rows become events again). The local store's
      // batch size can be large (DuckDB's is 30,720), so they go in pieces that stay well inside its socket's
      // message limit.
      const events = "events" in what ? what.events : eventsOfRows(what.rows);
      for (let i = 0; i < events.length; i += remoteInsertEvents) {
        const frame = await remote.request({
          queryId: "insert",
          tags: { namespaceId, orgId },
          compression: "none",
          want: { kind: "insert", events: events.slice(i, i + remoteInsertEvents) as TracedEvent[] },
        });
        const result = decodeResult(frame);
        if (result.tunnelError || result.databaseError) {
          throw new AppError("UNAVAILABLE", result.tunnelError ?? result.databaseError ?? "worker insert failed");
        }
        await decodeResultData(result);
      }
      return;
    }
    if (!this.deps.local) return;
    if (orgId) this.seen(orgId);
    if ("events" in what) await this.deps.local.insert(namespaceId, what.events);
    else await this.deps.local.insertRows(namespaceId, what.rows);
  }

  /**
   * Which of these events the namespace's store holds, for resent messages. An org with a self-hosted worker is not
   * asked (its worker's store is not queried for this): its resent events are stored again (at least once).
   */
  async storedEventIds(namespaceId: string, eventIds: readonly string[], fromMicros: number, toMicros: number): Promise<Set<string>> {
    const local = this.deps.local;
    if (!local?.storedEventIds) return new Set();
    const orgId = await this.orgOf(namespaceId);
    if (orgId && (this.remote.has(orgId) || (await this.workerRow(orgId)))) return new Set();
    return local.storedEventIds(namespaceId, eventIds, fromMicros, toMicros);
  }

  /** The store ingest writes to: the local store with inserts routed per org. */
  route(): EventStore {
    const local = this.deps.local;
    if (!local) throw new Error("WorkerRegistry.route: no local store");
    return {
      kind: local.kind,
      insertBatchSize: local.insertBatchSize,
      ensureNamespace: (ns) => local.ensureNamespace(ns),
      insert: (ns, events) => this.insert(ns, events),
      insertRows: (ns, rows) => this.insertRows(ns, rows),
      queryRows: (ns, q) => local.queryRows(ns, q),
      histogram: (ns, q) => local.histogram(ns, q),
      endpoints: (ns, q) => local.endpoints(ns, q),
      getEvent: (ns, id) => local.getEvent(ns, id),
      getEvents: (ns, ids, range) => local.getEvents(ns, ids, range),
      storedEventIds: (ns, ids, from, to) => this.storedEventIds(ns, ids, from, to),
      deleteOlderThan: (ns, c) => local.deleteOlderThan(ns, c),
      applyRetention: (ns, d, n) => local.applyRetention(ns, d, n),
      listNamespaces: () => local.listNamespaces(),
      dropNamespace: (ns) => local.dropNamespace(ns),
      close: () => local.close(),
    };
  }
}

/** Events per insert frame to a self-hosted worker. */
const remoteInsertEvents = 5000;

function readOrgList(path: string | undefined): string[] {
  if (!path || !existsSync(path)) return [];
  try {
    const list = JSON.parse(readFileSync(path, "utf8"));
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}
