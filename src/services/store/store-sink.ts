import type { EventSink, EventTarget } from "~/services/ingest/sink.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { log } from "~/lib/logger.ts";
import type { EventStore } from "~/store/types.ts";
import { NamespaceRateLimiter, type RateLimit, rateLimitFor } from "./rate-limit.ts";

export type DropReason = "rate_limited" | "overloaded" | "store_error";

export type SinkStats = {
  accepted: number;
  written: number;
  dropped: Record<DropReason, number>;
};

export type StoreSinkOptions = {
  store: EventStore;
  /** Events per second per namespace on average (config.ingestRateLimit); 0 = no limit. */
  rateLimit: number | RateLimit;
  /** A batch is written once this many events wait... */
  batchSize?: number;
  /** ...or after this long, whichever comes first. */
  flushIntervalMs?: number;
  /** Events held per namespace while the store is slow; beyond that new events are dropped. */
  maxBuffered?: number;
  /** Batches written at once per namespace. */
  writeConcurrency?: number;
  /** Told about every drop, so ingest can tell the publisher (and the CLI can say it). */
  onDropped?: (target: EventTarget, count: number, reason: DropReason) => void;
  now?: () => number;
};

type Pending = { events: TracedEvent[]; writing: Promise<void> | null };

/**
 * The store's side of ingest: accepts validated events without blocking the publisher's socket,
 * applies the namespace's rate limit, and writes to the namespace's table in batches (by count or
 * every second). Link-only events (no namespace) are not stored.
 */
export class StoreSink implements EventSink {
  private readonly pending = new Map<string, Pending>();
  private readonly stats = new Map<string, SinkStats>();
  private readonly limiter: NamespaceRateLimiter;
  private readonly batchSize: number;
  private readonly maxBuffered: number;
  private readonly writeConcurrency: number;
  private readonly timer: ReturnType<typeof setInterval>;
  private isClosed = false;

  constructor(private readonly options: StoreSinkOptions) {
    const limit = typeof options.rateLimit === "number" ? rateLimitFor(options.rateLimit) : options.rateLimit;
    this.limiter = new NamespaceRateLimiter(limit, options.now);
    this.batchSize = options.batchSize ?? 5000;
    this.maxBuffered = options.maxBuffered ?? 200_000;
    this.writeConcurrency = Math.max(1, options.writeConcurrency ?? 2);
    this.timer = setInterval(() => {
      void this.flush();
      this.limiter.sweep();
    }, options.flushIntervalMs ?? 1000);
    this.timer.unref?.();
  }

  private statsOf(ns: string): SinkStats {
    let s = this.stats.get(ns);
    if (!s) {
      s = { accepted: 0, written: 0, dropped: { rate_limited: 0, overloaded: 0, store_error: 0 } };
      this.stats.set(ns, s);
    }
    return s;
  }

  private drop(target: EventTarget, ns: string, count: number, reason: DropReason): void {
    if (count <= 0) return;
    this.statsOf(ns).dropped[reason] += count;
    try {
      this.options.onDropped?.(target, count, reason);
    } catch {}
  }

  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    this.offer(target, events);
  }

  /** Returns how many of the events were dropped at once (rate limit, or the buffer full). */
  offer(target: EventTarget, events: readonly TracedEvent[]): number {
    const ns = target.namespaceId;
    if (!ns || events.length === 0 || this.isClosed) return 0;
    const granted = this.limiter.take(ns, events.length);
    this.drop(target, ns, events.length - granted, "rate_limited");
    if (granted === 0) return events.length;
    const p = this.pending.get(ns) ?? { events: [], writing: null };
    this.pending.set(ns, p);
    const room = Math.max(0, this.maxBuffered - p.events.length);
    const kept = Math.min(granted, room);
    this.drop(target, ns, granted - kept, "overloaded");
    for (let i = 0; i < kept; i++) p.events.push(events[i] as TracedEvent);
    this.statsOf(ns).accepted += kept;
    if (p.events.length >= this.batchSize && !p.writing) void this.flushNamespace(ns);
    return events.length - kept;
  }

  private flushNamespace(ns: string): Promise<void> {
    const p = this.pending.get(ns);
    if (!p) return Promise.resolve();
    if (p.writing) return p.writing;
    if (p.events.length === 0) return Promise.resolve();
    // A few batches in flight: ClickHouse parses one while the next is serialised; DuckDB queues them.
    const worker = async () => {
      while (p.events.length > 0) {
        const batch = p.events.splice(0, this.batchSize);
        try {
          await this.options.store.insert(ns, batch);
          this.statsOf(ns).written += batch.length;
        } catch (err) {
          log.error("store write failed", { namespaceId: ns, events: batch.length, err });
          this.drop({ namespaceId: ns, linkId: null }, ns, batch.length, "store_error");
        }
      }
    };
    const run = () => Promise.all(Array.from({ length: this.writeConcurrency }, worker)).then(() => undefined);
    p.writing = run().finally(() => {
      p.writing = null;
      if (p.events.length === 0) this.pending.delete(ns);
    });
    return p.writing;
  }

  /** Writes everything accepted so far. */
  async flush(): Promise<void> {
    await Promise.all([...this.pending.keys()].map((ns) => this.flushNamespace(ns)));
  }

  statsFor(namespaceId: string): SinkStats {
    const s = this.statsOf(namespaceId);
    return { ...s, dropped: { ...s.dropped } };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.isClosed = true;
    await this.flush();
  }
}
