import type { EventSink, EventTarget } from "~/engines/ingest/sinks.ts";
import { errorMessage } from "~/lib/errors.ts";
import type { OtlpStats } from "~/lib/protocol/api/otlp.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { estimateJsonLength } from "~/lib/protocol/event-size.ts";
import type { Config } from "~/lib/server/env.ts";
import { log } from "~/lib/server/logger.ts";
import type { NamespaceExport } from "~/services/otlp/export-destinations.ts";
import { destinationProblem, type ExportAnswer, encodeSpans, postExport } from "~/services/otlp/otlp-http.ts";
import {
  childContext,
  contextFromHeaders,
  type ResourceSpan,
  requestLink,
  spanOf as spanOfEvent,
  type TraceContext,
  traceIdOf,
} from "~/services/otlp/spans.ts";

export type OtlpExporterOptions = {
  config: Pick<Config, "otlp" | "otlpDestinations" | "publicUrl">;
  /** Where these namespaces' spans go now (services/otlp/export-destinations.ts). */
  loadDestinations: (namespaceIds: string[]) => Promise<Map<string, NamespaceExport>>;
  /** Whether any namespace has settings of its own (none, and no server-wide collector: every event is passed by). */
  hasNamespaceExports: () => Promise<boolean>;
  /** Spans per request to the collector. */
  batchSize?: number;
  /** A partial batch is sent once its oldest span has waited this long. */
  flushIntervalMs?: number;
  /** Spans held per namespace (queued, being retried, waiting for their parent); beyond, new ones are dropped and counted. */
  maxQueuedPerNamespace?: number;
  /** The same bound for all namespaces together. */
  maxQueuedTotal?: number;
  /**
   * About the memory all of it may hold, spans and events waiting for their namespace's settings (the export's share
   * of MEMORY_LIMIT); a namespace may hold a quarter of it.
   */
  maxQueuedBytes?: number;
  /** Events of a namespace held while its settings are first read. */
  maxUndecidedPerNamespace?: number;
  /**
   * How long an outbound call waits for the request it was made under (which usually ends after it) to learn that
   * request's trace; past it, it is sent under the trace its parent would start.
   */
  parentWaitMs?: number;
  /** How long a failing batch is retried, with backoff, before its spans are given up and counted. */
  retryForMs?: number;
  /** Settings are read again this often (saved on another node of a cluster, or the namespace deleted). */
  refreshMs?: number;
  /** Requests to collectors in flight at once, all namespaces together. */
  maxConcurrentExports?: number;
  fetch?: typeof fetch;
  /** Name resolution for OTLP_DESTINATIONS=public. */
  resolve?: (host: string) => Promise<string[]>;
  now?: () => number;
};

type Stats = Omit<OtlpStats, "queued" | "lastExportTime" | "lastError"> & {
  lastExportMs: number | null;
  lastError: { atMs: number; message: string } | null;
};

/** A span waiting for its parent request's trace. */
type Waiting = { span: ResourceSpan; parentId: string; atMs: number; isDone: boolean };

type Retry = { spans: ResourceSpan[]; attempts: number; firstMs: number; nextMs: number };

/** One namespace's export: its destination, queue, the spans waiting for a parent, what is being retried, its counts. */
type Lane = {
  namespaceId: string;
  settings: NamespaceExport | null;
  isLoading: boolean;
  loadedMs: number;
  /** Events that came before the settings were first read. */
  undecided: TracedEvent[];
  /** What this lane holds, about, in bytes (its spans, waiting or not, and its undecided events). */
  bytes: number;
  queue: ResourceSpan[];
  oldestQueuedMs: number;
  /** Inbound requests' trace contexts by event id, oldest first (bounded): what their outbound calls join. */
  contexts: Map<string, TraceContext>;
  waiting: Map<string, Waiting[]>;
  waitingOrder: Waiting[];
  waitingCount: number;
  retry: Retry | null;
  isSending: boolean;
  seenMs: number;
  stats: Stats;
};

const emptyStats = (): Stats => ({ exported: 0, dropped: 0, failed: 0, rejected: 0, lastExportMs: null, lastError: null });

/**
 * OTLP trace export, one more event sink (ADR 0031). `accept` runs on ingest's path and only maps events to spans and
 * queues them (bounded, per namespace and in all): it never waits on the database or a collector. A timer sends full
 * batches, or a partial one after `flushIntervalMs`; a batch that fails in a way worth retrying is sent again with
 * backoff for `retryForMs`, while newer spans queue behind it up to the bound, then are dropped and counted.
 *
 * In a cluster each node exports what it accepted itself (events from other nodes reach its live hub, not its sinks),
 * so each event is exported once.
 */
export class OtlpExporter implements EventSink {
  private readonly lanes = new Map<string, Lane>();
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly maxQueuedPerNamespace: number;
  private readonly maxQueuedTotal: number;
  private readonly maxQueuedBytes: number;
  private readonly maxUndecided: number;
  private readonly parentWaitMs: number;
  private readonly retryForMs: number;
  private readonly refreshMs: number;
  private readonly maxConcurrent: number;
  private readonly now: () => number;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly publicChecks = new Map<string, { problem: string | null; atMs: number }>();
  /** null until first asked; then whether any namespace may export (refreshed with the settings). */
  private mayExport: boolean | null;
  private isCheckingMayExport = false;
  private mayExportCheckedMs = 0;
  private queuedTotal = 0;
  private queuedBytes = 0;
  private inFlight = 0;
  private readonly sends = new Set<Promise<void>>();
  private readonly loads = new Set<Promise<void>>();
  private isClosed = false;
  /** Counts of lanes no longer held (idle namespaces), kept in the totals. */
  private readonly retired = emptyStats();

  constructor(private readonly options: OtlpExporterOptions) {
    this.batchSize = options.batchSize ?? 512;
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxQueuedPerNamespace = options.maxQueuedPerNamespace ?? 20_000;
    this.maxQueuedTotal = options.maxQueuedTotal ?? 200_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 ** 2;
    this.maxUndecided = options.maxUndecidedPerNamespace ?? 5000;
    this.parentWaitMs = options.parentWaitMs ?? 30_000;
    this.retryForMs = options.retryForMs ?? 60_000;
    this.refreshMs = options.refreshMs ?? 5000;
    this.maxConcurrent = options.maxConcurrentExports ?? 8;
    this.now = options.now ?? Date.now;
    this.mayExport = options.config.otlp ? true : null;
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.min(this.flushIntervalMs, 1000) / 2));
    this.timer.unref?.();
  }

  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    const ns = target.namespaceId;
    if (!ns || events.length === 0 || this.isClosed) return;
    if (this.mayExport === false) return;
    let lane = this.lanes.get(ns);
    if (!lane) {
      lane = this.newLane(ns);
      this.lanes.set(ns, lane);
      void this.load([lane]);
    }
    lane.seenMs = this.now();
    if (!lane.settings) {
      for (const e of events) {
        const bytes = estimateJsonLength(e);
        if (lane.undecided.length >= this.maxUndecided || !this.hasBytes(lane, bytes)) {
          lane.stats.dropped++;
          continue;
        }
        lane.undecided.push(e);
        this.hold(lane, bytes);
      }
      return;
    }
    if (!lane.settings.destination) return;
    for (const e of events) this.enqueue(lane, e);
  }

  /** What this node exported for a namespace (the settings screen). */
  statsFor(namespaceId: string): OtlpStats {
    const lane = this.lanes.get(namespaceId);
    if (!lane) return { ...publicStats(emptyStats()), queued: 0 };
    return { ...publicStats(lane.stats), queued: this.queuedOf(lane) };
  }

  /** All namespaces together (/api/health). */
  totals(): OtlpStats {
    const sum = { ...this.retired };
    let queued = 0;
    for (const lane of this.lanes.values()) {
      sum.exported += lane.stats.exported;
      sum.dropped += lane.stats.dropped;
      sum.failed += lane.stats.failed;
      sum.rejected += lane.stats.rejected;
      if ((lane.stats.lastExportMs ?? 0) > (sum.lastExportMs ?? 0)) sum.lastExportMs = lane.stats.lastExportMs;
      queued += this.queuedOf(lane);
    }
    return { ...publicStats({ ...sum, lastError: null }), queued };
  }

  /** Whether this server exports at all (a server-wide collector, or a namespace with settings of its own). */
  get isActive(): boolean {
    return this.mayExport === true;
  }

  /** A namespace's settings changed here: read them again now (other nodes do within refreshMs). */
  settingsChanged(namespaceId: string): void {
    this.mayExport = this.options.config.otlp ? true : null;
    this.mayExportCheckedMs = 0;
    const lane = this.lanes.get(namespaceId);
    if (!lane) return;
    // New events wait (bounded) for the new settings rather than go where the old ones said.
    lane.settings = null;
    void this.load([lane]);
  }

  /**
   * Sends what is queued (parents no longer waited for) and waits until every batch is sent or given up (retries
   * included, so at most retryForMs plus a send); for shutdown and tests.
   */
  async flush(): Promise<void> {
    await Promise.all(this.loads);
    for (const lane of this.lanes.values()) {
      this.releaseWaiting(lane, Number.POSITIVE_INFINITY);
      if (lane.retry) lane.retry.nextMs = 0;
    }
    for (;;) {
      for (const lane of this.lanes.values()) this.pump(lane, true);
      if (this.sends.size > 0) {
        await Promise.race(this.sends);
        continue;
      }
      let nextMs = Number.POSITIVE_INFINITY;
      for (const lane of this.lanes.values()) {
        if (lane.retry) nextMs = Math.min(nextMs, lane.retry.nextMs);
        else if (lane.queue.length > 0 && lane.settings?.destination) nextMs = 0;
      }
      if (nextMs === Number.POSITIVE_INFINITY) return;
      await Bun.sleep(Math.max(1, nextMs - this.now()));
    }
  }

  async close(): Promise<void> {
    this.isClosed = true;
    clearInterval(this.timer);
    let timeout: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.flushOnce().catch(() => {}),
      new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, 2000);
      }),
    ]);
    clearTimeout(timeout);
  }

  private async flushOnce(): Promise<void> {
    for (const lane of this.lanes.values()) {
      this.releaseWaiting(lane, Number.POSITIVE_INFINITY);
      lane.retry = null;
      this.pump(lane, true);
    }
    await Promise.all(this.sends);
  }

  private newLane(namespaceId: string): Lane {
    return {
      namespaceId,
      settings: null,
      isLoading: false,
      loadedMs: 0,
      undecided: [],
      bytes: 0,
      queue: [],
      oldestQueuedMs: 0,
      contexts: new Map(),
      waiting: new Map(),
      waitingOrder: [],
      waitingCount: 0,
      retry: null,
      isSending: false,
      seenMs: this.now(),
      stats: emptyStats(),
    };
  }

  private queuedOf(lane: Lane): number {
    return lane.queue.length + lane.waitingCount + (lane.retry?.spans.length ?? 0) + lane.undecided.length;
  }

  private hasRoom(lane: Lane): boolean {
    return this.queuedOf(lane) < this.maxQueuedPerNamespace && this.queuedTotal < this.maxQueuedTotal;
  }

  private hasBytes(lane: Lane, bytes: number): boolean {
    return this.queuedBytes + bytes <= this.maxQueuedBytes && lane.bytes + bytes <= this.maxQueuedBytes / 4;
  }

  /** Counts `bytes` as held by the lane (negative: let go). */
  private hold(lane: Lane, bytes: number): void {
    lane.bytes += bytes;
    this.queuedBytes += bytes;
  }

  private releaseSpans(lane: Lane, spans: Iterable<ResourceSpan>): void {
    let bytes = 0;
    for (const s of spans) bytes += s.bytes;
    this.hold(lane, -bytes);
  }

  private releaseUndecided(lane: Lane): TracedEvent[] {
    const undecided = lane.undecided;
    lane.undecided = [];
    let bytes = 0;
    for (const e of undecided) bytes += estimateJsonLength(e);
    this.hold(lane, -bytes);
    return undecided;
  }

  private link(lane: Lane, e: TracedEvent): string {
    return requestLink(this.options.config.publicUrl, lane.settings?.namespaceName ?? "", e.event_id, e.time);
  }

  private enqueue(lane: Lane, e: TracedEvent): void {
    if (!this.hasRoom(lane)) {
      lane.stats.dropped++;
      return;
    }
    const parentId = e.http_is_outgoing ? e.parent_event_id : "";
    if (parentId) {
      const parent = lane.contexts.get(parentId);
      // Provisional until the parent is seen: its trace if it started one, which is what most requests do.
      const context = childContext(parent ?? { traceId: traceIdOf(parentId), parentSpanId: null, traceState: "" }, parentId);
      const span = this.spanOf(lane, e, context);
      if (!this.hasBytes(lane, span.bytes)) {
        lane.stats.dropped++;
        return;
      }
      this.hold(lane, span.bytes);
      if (parent) {
        this.push(lane, span);
        return;
      }
      const waiting: Waiting = { span, parentId, atMs: this.now(), isDone: false };
      let list = lane.waiting.get(parentId);
      if (!list) {
        list = [];
        lane.waiting.set(parentId, list);
      }
      list.push(waiting);
      lane.waitingOrder.push(waiting);
      lane.waitingCount++;
      this.queuedTotal++;
      return;
    }
    const context = contextFromHeaders(e);
    const span = this.spanOf(lane, e, context);
    if (!this.hasBytes(lane, span.bytes)) {
      lane.stats.dropped++;
      return;
    }
    this.hold(lane, span.bytes);
    if (!e.http_is_outgoing) {
      lane.contexts.set(e.event_id, context);
      if (lane.contexts.size > this.maxQueuedPerNamespace) {
        const oldest = lane.contexts.keys().next().value;
        if (oldest !== undefined) lane.contexts.delete(oldest);
      }
    }
    this.push(lane, span);
    const children = lane.waiting.get(e.event_id);
    if (children) {
      lane.waiting.delete(e.event_id);
      for (const w of children) {
        w.span.span.traceId = context.traceId;
        if (context.traceState) w.span.span.traceState = context.traceState;
        this.unwait(lane, w);
      }
    }
  }

  private spanOf(lane: Lane, e: TracedEvent, context: TraceContext): ResourceSpan {
    return spanOfEvent(e, context, this.link(lane, e));
  }

  private unwait(lane: Lane, w: Waiting): void {
    if (w.isDone) return;
    w.isDone = true;
    lane.waitingCount--;
    this.queuedTotal--;
    this.push(lane, w.span);
  }

  /** Sends on the spans that waited long enough for their parent (all of them, with `olderThanMs` infinite). */
  private releaseWaiting(lane: Lane, waitMs: number): void {
    const cutoff = waitMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : this.now() - waitMs;
    let released = 0;
    for (const w of lane.waitingOrder) {
      if (!w.isDone && w.atMs > cutoff) break;
      released++;
      if (!w.isDone) {
        lane.waiting.delete(w.parentId);
        this.unwait(lane, w);
      }
    }
    if (released > 0) lane.waitingOrder.splice(0, released);
  }

  private push(lane: Lane, span: ResourceSpan): void {
    if (lane.queue.length === 0) lane.oldestQueuedMs = this.now();
    lane.queue.push(span);
    this.queuedTotal++;
    if (lane.queue.length >= this.batchSize) this.pump(lane, false);
  }

  private tick(): void {
    const now = this.now();
    if (this.mayExport !== true && !this.isCheckingMayExport && now - this.mayExportCheckedMs >= this.refreshMs) void this.checkMayExport();
    const stale: Lane[] = [];
    for (const lane of [...this.lanes.values()]) {
      this.releaseWaiting(lane, this.parentWaitMs);
      if (lane.queue.length > 0 && now - lane.oldestQueuedMs >= this.flushIntervalMs) this.pump(lane, true);
      else if (lane.retry && now >= lane.retry.nextMs) this.pump(lane, true);
      if (!lane.isLoading && now - lane.loadedMs >= this.refreshMs) stale.push(lane);
      // A namespace idle for a while with nothing held is let go (its counts stay in the totals).
      if (now - lane.seenMs > 10 * 60_000 && this.queuedOf(lane) === 0 && !lane.isSending) {
        this.retire(lane);
      }
    }
    if (stale.length > 0) void this.load(stale);
  }

  private retire(lane: Lane): void {
    this.lanes.delete(lane.namespaceId);
    this.retired.exported += lane.stats.exported;
    this.retired.dropped += lane.stats.dropped;
    this.retired.failed += lane.stats.failed;
    this.retired.rejected += lane.stats.rejected;
  }

  private async checkMayExport(): Promise<void> {
    this.isCheckingMayExport = true;
    try {
      const has = await this.options.hasNamespaceExports();
      this.mayExport = Boolean(this.options.config.otlp) || has;
      if (!this.mayExport) for (const lane of this.lanes.values()) this.releaseUndecided(lane);
    } catch (err) {
      log.warn("OTLP export settings could not be read", { err: errorMessage(err) });
    } finally {
      this.mayExportCheckedMs = this.now();
      this.isCheckingMayExport = false;
    }
  }

  private load(lanes: Lane[]): Promise<void> {
    const loading = this.loadNow(lanes).finally(() => this.loads.delete(loading));
    this.loads.add(loading);
    return loading;
  }

  private async loadNow(lanes: Lane[]): Promise<void> {
    for (const lane of lanes) lane.isLoading = true;
    if (this.mayExport === null) await this.checkMayExport();
    try {
      const found = await this.options.loadDestinations(lanes.map((l) => l.namespaceId));
      for (const lane of lanes) {
        lane.loadedMs = this.now();
        const settings = found.get(lane.namespaceId) ?? {
          namespaceId: lane.namespaceId,
          namespaceName: "",
          destination: null,
          problem: "namespace deleted",
        };
        lane.settings = settings;
        if (!settings.destination) {
          this.queuedTotal -= lane.queue.length + lane.waitingCount;
          this.releaseSpans(lane, lane.queue);
          for (const w of lane.waitingOrder) if (!w.isDone) this.hold(lane, -w.span.bytes);
          lane.queue = [];
          lane.waiting.clear();
          lane.waitingOrder = [];
          lane.waitingCount = 0;
          // A send in flight settles its own batch.
          if (lane.retry && !lane.isSending) {
            this.queuedTotal -= lane.retry.spans.length;
            this.releaseSpans(lane, lane.retry.spans);
            lane.retry = null;
          }
          if (settings.problem && settings.problem !== "namespace deleted") {
            lane.stats.lastError = { atMs: this.now(), message: settings.problem };
          }
        }
        const undecided = this.releaseUndecided(lane);
        if (settings.destination) for (const e of undecided) this.enqueue(lane, e);
      }
    } catch (err) {
      log.warn("OTLP export settings could not be read", { err: errorMessage(err) });
    } finally {
      for (const lane of lanes) lane.isLoading = false;
    }
  }

  /** Starts a send for the lane if it has a batch to send and nothing in flight; `partial` sends a short batch too. */
  private pump(lane: Lane, partial: boolean): void {
    if (lane.isSending || this.inFlight >= this.maxConcurrent) return;
    const destination = lane.settings?.destination;
    if (!destination) return;
    let spans: ResourceSpan[];
    let retry = lane.retry;
    if (retry) {
      if (this.now() < retry.nextMs) return;
      spans = retry.spans;
    } else {
      if (lane.queue.length === 0 || (!partial && lane.queue.length < this.batchSize)) return;
      spans = lane.queue.splice(0, this.batchSize);
      if (lane.queue.length > 0) lane.oldestQueuedMs = this.now();
      retry = { spans, attempts: 0, firstMs: this.now(), nextMs: 0 };
      lane.retry = retry;
    }
    lane.isSending = true;
    this.inFlight++;
    const send = this.send(lane, destination, retry).finally(() => {
      lane.isSending = false;
      this.inFlight--;
      this.sends.delete(send);
      if (!this.isClosed && (lane.queue.length >= this.batchSize || (lane.retry && this.now() >= lane.retry.nextMs)))
        this.pump(lane, false);
    });
    this.sends.add(send);
  }

  private async send(lane: Lane, destination: NonNullable<NamespaceExport["destination"]>, retry: Retry): Promise<void> {
    const count = retry.spans.length;
    let answer: ExportAnswer;
    const problem = destination.source === "namespace" ? await this.publicProblem(destination.url) : null;
    if (problem) {
      answer = { isOk: false, isRetryable: false, status: null, message: problem, rejectedSpans: 0 };
    } else {
      try {
        const encoded = await encodeSpans(retry.spans, destination.protocol);
        answer = await postExport(destination, encoded, { fetch: this.options.fetch });
      } catch (err) {
        answer = {
          isOk: false,
          isRetryable: false,
          status: null,
          message: `could not encode the spans: ${errorMessage(err)}`,
          rejectedSpans: 0,
        };
      }
    }
    retry.attempts++;
    const now = this.now();
    if (answer.isOk) {
      lane.stats.exported += count - answer.rejectedSpans;
      lane.stats.rejected += answer.rejectedSpans;
      lane.stats.lastExportMs = now;
      if (answer.rejectedSpans > 0) lane.stats.lastError = { atMs: now, message: answer.message };
    } else {
      const message = answer.status === null ? answer.message : `HTTP ${answer.status}: ${answer.message}`;
      lane.stats.lastError = { atMs: now, message };
      const isStillWanted = Boolean(lane.settings?.destination) && !this.isClosed;
      if (answer.isRetryable && now - retry.firstMs < this.retryForMs && isStillWanted) {
        const backoff = Math.min(30_000, 500 * 2 ** retry.attempts) * (0.75 + Math.random() * 0.5);
        retry.nextMs = now + Math.min(30_000, Math.max(backoff, answer.retryAfterMs ?? 0));
        return;
      }
      lane.stats.failed += count;
      if (!answer.isRetryable) {
        log.warn("OTLP export refused", { namespaceId: lane.namespaceId, status: answer.status, message: answer.message });
      } else {
        log.warn("OTLP export given up after retries", { namespaceId: lane.namespaceId, spans: count, message });
      }
    }
    if (lane.retry === retry) lane.retry = null;
    this.queuedTotal -= count;
    this.releaseSpans(lane, retry.spans);
  }

  private async publicProblem(url: string): Promise<string | null> {
    if (this.options.config.otlpDestinations !== "public") return null;
    const host = new URL(url).hostname;
    const cached = this.publicChecks.get(host);
    if (cached && this.now() - cached.atMs < 60_000) return cached.problem;
    const problem = await destinationProblem(url, this.options.resolve);
    if (this.publicChecks.size > 10_000) this.publicChecks.clear();
    this.publicChecks.set(host, { problem, atMs: this.now() });
    return problem;
  }
}

function publicStats(s: Stats): Omit<OtlpStats, "queued"> {
  return {
    exported: s.exported,
    dropped: s.dropped,
    failed: s.failed,
    rejected: s.rejected,
    lastExportTime: s.lastExportMs === null ? null : new Date(s.lastExportMs).toISOString(),
    lastError: s.lastError ? { time: new Date(s.lastError.atMs).toISOString(), message: s.lastError.message } : null,
  };
}
