import { randomUUID } from "node:crypto";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { type PendingRequest, pendingLimits } from "~/lib/protocol/pending.ts";
import { rateLimitFor, TokenBucket } from "~/lib/rate-limit.ts";
import { BoundedQueue } from "./bounded-queue.ts";
import { buildDbEvent } from "./db-event.ts";
import {
  buildHttpEvent,
  buildPendingRequest,
  buildTcpEvent,
  DECODE_BUDGET,
  type EventContext,
  type HostMetadata,
  ProcessCache,
  type ProcessInfo,
  readProcessInfo,
} from "./event.ts";
import type { Exchange } from "./parse/exchange.ts";
import { HeaderValueMemo, type RedactMode } from "./redact.ts";
import { type ConnectionInfo, type ConnectionObserver, type ConnectionTap, nowMicros } from "./relay/observer.ts";
import { ParentTracker } from "./tracer/parent-tracker.ts";
import { emptyTracerStats, type TracerStats } from "./tracer/stats.ts";
import { type FinishedWork, TracedConnection, type TracedConnectionDeps } from "./tracer/traced-connection.ts";
import { buildWsEvent } from "./ws-event.ts";

export type { TracerStats } from "./tracer/stats.ts";

export type TracerOptions = {
  /** Receives each finished event, off the relay's data path (batched on setImmediate). */
  onEvent(event: CapturedEvent): void;
  host: HostMetadata;
  service?: string;
  redact?: RedactMode;
  /** Body bytes kept per message and direction (and per WebSocket message). */
  payloadLimit?: number;
  /** WebSocket messages recorded per second per connection (ten seconds' worth at once); 0: all of them. */
  webSocketMessageRate?: number;
  /** Finished exchanges waiting to become events; beyond this they are dropped and counted. */
  maxQueued?: number;
  processInfo?: (pid: number) => ProcessInfo;
  /** Record inbound connections on which nothing was sent (health checks); off by default. */
  recordEmptyConnections?: boolean;
  /** Which inbound request each process is serving; shared when several relay threads parse connections. */
  parents?: TracedConnectionDeps["parents"];
  /**
   * Receives requests that have waited a second (PENDING_AFTER_MS) without a response head, a few at a time, so a
   * live view or `--log` can show them as pending until their event comes; absent: nothing is swept.
   */
  onPending?(requests: PendingRequest[]): void;
};

export type Tracer = ConnectionObserver & {
  stats(): TracerStats;
  /** Turns every queued exchange into an event now (used at exit and in tests). */
  flush(): void;
};

export const DEFAULT_PAYLOAD_LIMIT = 64 * 1024;

/** WebSocket messages recorded per second on one connection, by default (a burst of ten seconds' worth at once). */
export const DEFAULT_WS_MESSAGE_RATE = 100;

/** Events built per event-loop turn: relayed traffic gets its turn between slices. */
const SLICE = 256;

/** How often the open connections are looked over for requests waiting for an answer. */
const PENDING_SWEEP_MS = 250;
/** Pending notices a tracer may send per second (and at once): a run with thousands of hung requests sends a few. */
const PENDING_PER_SECOND = pendingLimits.perSecond;
const PENDING_BURST = pendingLimits.burst;

/**
 * The relay's observer for `tapscope run` and `proxy`: a TracedConnection per connection parses on the data path;
 * what it finishes waits in a bounded queue and becomes events a slice per event-loop turn.
 */
export function createTracer(options: TracerOptions): Tracer {
  const ctx: EventContext = {
    host: options.host,
    service: options.service,
    redact: options.redact ?? "redact",
    payloadLimit: Math.max(0, options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT),
    headerMemo: new HeaderValueMemo(),
    decodeBudget: new TokenBucket(DECODE_BUDGET, performance.now()),
  };
  const processes = new ProcessCache(options.processInfo ?? ((pid) => readProcessInfo(pid, "/proc", ctx.redact)));
  const stats = emptyTracerStats();
  /** Events that failed to build; the queue counts its own drops. */
  let buildFailures = 0;
  const queue = new BoundedQueue<FinishedWork>(options.maxQueued ?? 10_000);
  let isScheduled = false;

  function build(item: FinishedWork): void {
    let event: CapturedEvent;
    try {
      event =
        item.kind === "http"
          ? buildHttpEvent(item.ex, item.conn, item.proc, ctx)
          : item.kind === "db"
            ? buildDbEvent(item.call, item.conn, item.proc, ctx)
            : item.kind === "ws"
              ? buildWsEvent(item.ws, item.conn, item.proc, ctx)
              : buildTcpEvent(item.sum, item.conn, item.proc, ctx);
    } catch {
      buildFailures++;
      return;
    }
    if (item.kind === "http") stats.httpEvents++;
    else if (item.kind === "db") stats[`${item.call.system}Calls`]++;
    else if (item.kind === "ws") stats.webSocketMessages++;
    else stats.tcpEvents++;
    try {
      options.onEvent(event);
    } catch {
      // The consumer's failure is its own; the tracer keeps going.
    }
  }

  function drainSlice(): void {
    isScheduled = false;
    for (let i = 0; i < SLICE; i++) {
      const item = queue.shift();
      if (item === undefined) return;
      build(item);
    }
    if (queue.length > 0 && !isScheduled) {
      isScheduled = true;
      setImmediate(drainSlice);
    }
  }

  /** Everything queued, now (exit, tests). */
  function drain(): void {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) build(item);
  }

  let releaseInbound: ((pid: number) => void) | null = null;
  const onPending = options.onPending;
  /** Connections that may hold requests in flight; kept only when someone reads pending notices. */
  const open = onPending ? new Set<TracedConnection>() : null;
  const shownPending = new WeakSet<Exchange>();
  const pendingBudget = new TokenBucket({ ratePerSecond: PENDING_PER_SECOND, burst: PENDING_BURST }, performance.now());

  /** Off the data path, on a timer: the requests that have waited long enough become notices. */
  function sweepPending(): void {
    if (!open || !onPending || open.size === 0) return;
    const before = nowMicros() - pendingLimits.afterMs * 1000;
    const requests: PendingRequest[] = [];
    const show = (ex: Exchange, conn: ConnectionInfo, proc: ProcessInfo): boolean => {
      if (requests.length >= pendingLimits.maxPerMessage || !pendingBudget.take(1, performance.now())) return false;
      try {
        requests.push(buildPendingRequest(ex, conn, proc, ctx));
      } catch {
        buildFailures++;
      }
      return true;
    };
    for (const connection of open) {
      connection.duePending(before, pendingLimits.perConnection, shownPending, show);
      if (requests.length >= pendingLimits.maxPerMessage) break;
    }
    if (requests.length === 0) return;
    try {
      onPending(requests);
    } catch {
      // As for events: the consumer's failure is its own.
    }
  }
  if (open) setInterval(sweepPending, PENDING_SWEEP_MS).unref();
  const deps: TracedConnectionDeps = {
    payloadLimit: ctx.payloadLimit,
    webSocketBudget: rateLimitFor(Math.max(0, options.webSocketMessageRate ?? DEFAULT_WS_MESSAGE_RATE)),
    decodeBudget: ctx.decodeBudget,
    recordEmptyConnections: options.recordEmptyConnections === true,
    stats,
    parents: options.parents ?? new ParentTracker<Exchange>(),
    newEventId: randomUUID,
    processInfo: (pid) => processes.get(pid),
    releaseInbound: (pid) => releaseInbound?.(pid),
    closed: open ? (connection) => open.delete(connection) : undefined,
    enqueue(item) {
      if (!queue.push(item)) return;
      if (!isScheduled) {
        isScheduled = true;
        setImmediate(drainSlice);
      }
    },
  };

  return {
    onOpen(info: ConnectionInfo): ConnectionTap | null {
      stats.connections++;
      stats.openConnections++;
      const connection = new TracedConnection(info, processes.get(info.pid), deps);
      open?.add(connection);
      return connection;
    },
    setInboundRelease(release) {
      releaseInbound = release;
    },
    stats: () => ({ ...stats, droppedEvents: buildFailures + queue.dropped }),
    flush: drain,
  };
}
