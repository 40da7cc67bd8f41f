import type { EventSink, EventTarget } from "~/services/ingest/sink.ts";
import { estimateJsonLength, type TracedEvent } from "~/lib/protocol/event.ts";
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
  /**
   * Batches of this size are written as soon as they are full (the store's insertBatchSize: the size it stores
   * most cheaply)...
   */
  batchSize?: number;
  /** ...and whatever is pending once its oldest event has waited this long. */
  flushIntervalMs?: number;
  /**
   * Characters one insert carries at most (estimateJsonLength; default 128 Mi): each column becomes one string
   * per insert, so a batch of large events is cut short of batchSize (a typical event is 2-3 thousand).
   */
  maxBatchChars?: number;
  /** Events held per namespace while the store is slow; beyond that new events are dropped. */
  maxBuffered?: number;
  /**
   * The same bound in characters (estimateJsonLength; default 512 Mi, about 200,000 typical events): events
   * with large bodies reach it long before maxBuffered.
   */
  maxBufferedChars?: number;
  /** Batches written at once per namespace. */
  writeConcurrency?: number;
  /** Told about every drop, so ingest can tell the publisher (and the CLI can say it). */
  onDropped?: (target: EventTarget, count: number, reason: DropReason) => void;
  now?: () => number;
};

type Pending = {
  events: TracedEvent[];
  /** Each pending event's size in characters (estimateJsonLength), and their sum. */
  sizes: number[];
  chars: number;
  /** When the pending events arrived: [how many, at], oldest first (one entry per offer, not per event). */
  arrivals: Array<[count: number, at: number]>;
  writing: Promise<void> | null;
};

/**
 * The store's side of ingest: accepts validated events without blocking the publisher's socket,
 * applies the namespace's rate limit, and writes to the namespace's table in batches (by count or
 * every second). Link-only events (no namespace) are not stored.
 *
 * While events arrive faster than the store writes them, every write is a full batch (the size the store
 * stores most cheaply); a partial batch is written only once its oldest event has waited the flush interval,
 * on flush() and on close. So a steady high rate never turns into a stream of odd-sized inserts, and a
 * trickle is still visible within about a second.
 */
export class StoreSink implements EventSink {
  private readonly pending = new Map<string, Pending>();
  private readonly stats = new Map<string, SinkStats>();
  private readonly limiter: NamespaceRateLimiter;
  private readonly batchSize: number;
  private readonly maxBuffered: number;
  private readonly maxBufferedChars: number;
  private readonly writeConcurrency: number;
  private readonly flushIntervalMs: number;
  private readonly maxBatchChars: number;
  private readonly now: () => number;
  private readonly timer: ReturnType<typeof setInterval>;
  private isClosed = false;

  constructor(private readonly options: StoreSinkOptions) {
    const limit = typeof options.rateLimit === "number" ? rateLimitFor(options.rateLimit) : options.rateLimit;
    this.limiter = new NamespaceRateLimiter(limit, options.now);
    this.batchSize = options.batchSize ?? 5000;
    this.maxBuffered = options.maxBuffered ?? 200_000;
    this.maxBufferedChars = options.maxBufferedChars ?? 512 * 1024 * 1024;
    this.writeConcurrency = Math.max(1, options.writeConcurrency ?? 2);
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxBatchChars = options.maxBatchChars ?? 128 * 1024 * 1024;
    this.now = options.now ?? Date.now;
    // Ticks at half the interval, so a partial batch waits between one and one and a half intervals.
    this.timer = setInterval(() => {
      for (const ns of this.pending.keys()) void this.flushNamespace(ns, false);
      this.limiter.sweep();
    }, Math.max(1, this.flushIntervalMs / 2));
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
    let p = this.pending.get(ns);
    if (!p) {
      p = { events: [], sizes: [], chars: 0, arrivals: [], writing: null };
      this.pending.set(ns, p);
    }
    const room = Math.max(0, this.maxBuffered - p.events.length);
    let kept = 0;
    for (; kept < Math.min(granted, room); kept++) {
      const event = events[kept] as TracedEvent;
      const size = estimateJsonLength(event);
      if (p.chars + size > this.maxBufferedChars) break;
      p.events.push(event);
      p.sizes.push(size);
      p.chars += size;
    }
    this.drop(target, ns, granted - kept, "overloaded");
    if (kept > 0) p.arrivals.push([kept, this.now()]);
    this.statsOf(ns).accepted += kept;
    if (p.events.length >= this.batchSize || p.chars >= this.maxBatchChars) void this.flushNamespace(ns, false);
    return events.length - kept;
  }

  /**
   * The next batch to write: a full one (batchSize events, or fewer that reach maxBatchChars), or, when `all` or
   * its oldest event is due, what is pending.
   */
  private nextBatch(p: Pending, all: boolean): TracedEvent[] | null {
    const n = p.events.length;
    if (n === 0) return null;
    const oldest = p.arrivals[0];
    const isDue = all || (oldest !== undefined && this.now() - oldest[1] >= this.flushIntervalMs);
    if (n < this.batchSize && p.chars < this.maxBatchChars && !isDue) return null;
    let count = 0;
    let chars = 0;
    while (count < n && count < this.batchSize && (count === 0 || chars + (p.sizes[count] as number) <= this.maxBatchChars)) {
      chars += p.sizes[count] as number;
      count++;
    }
    const batch = p.events.splice(0, count);
    p.sizes.splice(0, count);
    p.chars -= chars;
    let taken = batch.length;
    while (taken > 0 && p.arrivals.length > 0) {
      const first = p.arrivals[0] as [number, number];
      if (first[0] <= taken) {
        taken -= first[0];
        p.arrivals.shift();
      } else {
        first[0] -= taken;
        taken = 0;
      }
    }
    return batch;
  }

  /**
   * Starts writing the namespace's batches unless a write is already running (it takes the new ones too).
   * `all`: write the partial batch too, now; otherwise only full batches and a partial one that is due.
   */
  private flushNamespace(ns: string, all: boolean): Promise<void> {
    const p = this.pending.get(ns);
    if (!p) return Promise.resolve();
    if (p.writing) {
      if (!all) return p.writing;
      // flush() must see everything written: once the running writes finish, write what is left.
      return p.writing.then(() => this.flushNamespace(ns, true));
    }
    if (p.events.length === 0) return Promise.resolve();
    // A few batches in flight: ClickHouse parses one while the next is serialised; DuckDB encodes the next
    // while it stores one.
    const worker = async () => {
      for (let batch = this.nextBatch(p, all); batch; batch = this.nextBatch(p, all)) {
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
    await Promise.all([...this.pending.keys()].map((ns) => this.flushNamespace(ns, true)));
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
