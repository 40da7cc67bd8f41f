import type { EventSink, EventTarget, Offered } from "~/engines/ingest/sinks.ts";
import { AppError, errorMessage } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type RateLimit, RateLimiter, rateLimitFor } from "~/lib/rate-limit.ts";
import { log } from "~/lib/server/logger.ts";
import { type EventRows, linkStoreId, sliceRows, toEventRows } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";

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
   * Characters one insert carries at most (EventRows sizes; default 128 Mi): each column becomes one string
   * per insert, so a batch of large events is cut short of batchSize (a typical event is 2-3 thousand).
   */
  maxBatchChars?: number;
  /** Events held per namespace while the store is slow; beyond that new events are dropped. */
  maxBuffered?: number;
  /**
   * The same bound in characters (EventRows sizes; default 512 Mi, about 200,000 typical events): events
   * with large bodies reach it long before maxBuffered.
   */
  maxBufferedChars?: number;
  /** Batches written at once per namespace. */
  writeConcurrency?: number;
  /** Keep shared links' events too, under linkStoreId (a cluster: a late viewer on any node reads them). */
  storeLinks?: boolean;
  /**
   * How long a batch whose write failed is tried again (with backoff) before its events are dropped and counted: a
   * ClickHouse shard restarting, a worker reconnecting. A request the store refuses as bad is not retried.
   */
  retryForMs?: number;
  /** Told about every drop, so ingest can tell the publisher (and the CLI can say it). */
  onDropped?: (target: EventTarget, count: number, reason: DropReason) => void;
  now?: () => number;
};

/**
 * The events of one offer, in their stored form (toEventRows), and when they arrived. `ticket` is shared by the
 * parts a chunk is cut into: it settles when all of them are written (or failed).
 */
type Chunk = { rows: EventRows; at: number; ticket: Ticket };

type Ticket = { remaining: number; failed: number; settle: (failed: number) => void };

/** A batch to insert, and how many of its events belong to which offer. */
type Batch = { rows: EventRows[]; parts: Array<{ ticket: Ticket; count: number }> };

type Pending = {
  chunks: Chunk[];
  /** Events pending, and their size in characters (EventRows sizes). */
  count: number;
  chars: number;
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
  private readonly limiter: RateLimiter;
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
    this.limiter = new RateLimiter(limit, { now: options.now });
    this.batchSize = options.batchSize ?? 5000;
    this.maxBuffered = options.maxBuffered ?? 200_000;
    this.maxBufferedChars = options.maxBufferedChars ?? 512 * 1024 * 1024;
    this.writeConcurrency = Math.max(1, options.writeConcurrency ?? 2);
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxBatchChars = options.maxBatchChars ?? 128 * 1024 * 1024;
    this.now = options.now ?? Date.now;
    // Ticks at half the interval, so a partial batch waits between one and one and a half intervals.
    this.timer = setInterval(
      () => {
        for (const ns of this.pending.keys()) void this.flushNamespace(ns, false);
        this.limiter.sweep();
      },
      Math.max(1, this.flushIntervalMs / 2),
    );
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

  /**
   * Returns how many of the events were dropped at once (rate limit, or the buffer full). The kept ones are turned
   * into their stored form now, so what waits for the insert is column text, not event objects.
   */
  offer(target: EventTarget, events: readonly TracedEvent[]): number {
    return this.offerDurable(target, events).dropped;
  }

  /** offer, and a promise that settles once the kept events are written: to how many of them the store failed to write. */
  offerDurable(target: EventTarget, events: readonly TracedEvent[]): Offered {
    const ns = target.namespaceId ?? (this.options.storeLinks && target.linkId ? linkStoreId(target.linkId) : null);
    if (!ns || events.length === 0 || this.isClosed) return { dropped: 0, stored: null };
    const granted = this.limiter.take(ns, events.length);
    this.drop(target, ns, events.length - granted, "rate_limited");
    if (granted === 0) return { dropped: events.length, stored: null };
    let p = this.pending.get(ns);
    if (!p) {
      p = { chunks: [], count: 0, chars: 0, writing: null };
      this.pending.set(ns, p);
    }
    const room = Math.min(granted, Math.max(0, this.maxBuffered - p.count));
    let rows = toEventRows(room === events.length ? events : events.slice(0, room));
    let kept = 0;
    let chars = 0;
    for (; kept < rows.count; kept++) {
      const size = rows.sizes[kept] as number;
      if (p.chars + chars + size > this.maxBufferedChars) break;
      chars += size;
    }
    if (kept < rows.count) rows = sliceRows(rows, 0, kept);
    this.drop(target, ns, granted - kept, "overloaded");
    let stored: Promise<number> | null = null;
    if (kept > 0) {
      const { promise, resolve } = Promise.withResolvers<number>();
      stored = promise;
      p.chunks.push({ rows, at: this.now(), ticket: { remaining: kept, failed: 0, settle: resolve } });
      p.count += kept;
      p.chars += chars;
    }
    this.statsOf(ns).accepted += kept;
    if (p.count >= this.batchSize || p.chars >= this.maxBatchChars) void this.flushNamespace(ns, false);
    return { dropped: events.length - kept, stored };
  }

  /**
   * The next batch to write: a full one (batchSize events, or fewer that reach maxBatchChars), or, when `all` or
   * its oldest event is due, what is pending. Chunks in order; the last one taken may be cut.
   */
  private nextBatch(p: Pending, all: boolean): Batch | null {
    const oldest = p.chunks[0];
    if (!oldest) return null;
    const isDue = all || this.now() - oldest.at >= this.flushIntervalMs;
    if (p.count < this.batchSize && p.chars < this.maxBatchChars && !isDue) return null;
    const batch: Batch = { rows: [], parts: [] };
    let count = 0;
    let chars = 0;
    while (count < this.batchSize && p.chunks.length > 0) {
      const chunk = p.chunks[0] as Chunk;
      const { sizes } = chunk.rows;
      let take = 0;
      while (
        take < sizes.length &&
        count + take < this.batchSize &&
        (count + take === 0 || chars + (sizes[take] as number) <= this.maxBatchChars)
      ) {
        chars += sizes[take] as number;
        take++;
      }
      if (take > 0) batch.parts.push({ ticket: chunk.ticket, count: take });
      if (take === chunk.rows.count) {
        batch.rows.push(chunk.rows);
        p.chunks.shift();
      } else {
        if (take > 0) batch.rows.push(sliceRows(chunk.rows, 0, take));
        chunk.rows = sliceRows(chunk.rows, take, chunk.rows.count);
      }
      count += take;
      if (take < sizes.length) break;
    }
    p.count -= count;
    p.chars -= chars;
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
    if (p.count === 0) return Promise.resolve();
    // A few batches in flight: ClickHouse parses one while the next is serialised; DuckDB encodes the next
    // while it stores one.
    const worker = async () => {
      for (let batch = this.nextBatch(p, all); batch; batch = this.nextBatch(p, all)) {
        const count = batch.rows.reduce((sum, rows) => sum + rows.count, 0);
        let isWritten = false;
        const giveUpAt = this.now() + (this.options.retryForMs ?? 15_000);
        for (let attempt = 1; ; attempt++) {
          try {
            await this.options.store.insertRows(ns, batch.rows);
            this.statsOf(ns).written += count;
            isWritten = true;
            if (attempt > 1) log.info("store write succeeded on retry", { namespaceId: ns, events: count, attempt });
            break;
          } catch (err) {
            const wait = Math.min(2_000, 100 * 2 ** (attempt - 1));
            if (!isRetryable(err) || this.isClosed || this.now() + wait > giveUpAt) {
              log.error("store write failed", { namespaceId: ns, events: count, attempts: attempt, err });
              this.drop({ namespaceId: ns, linkId: null }, ns, count, "store_error");
              break;
            }
            if (attempt === 1) log.warn("store write failed; retrying", { namespaceId: ns, events: count, err: errorMessage(err) });
            await Bun.sleep(wait);
          }
        }
        for (const { ticket, count: n } of batch.parts) {
          ticket.remaining -= n;
          if (!isWritten) ticket.failed += n;
          if (ticket.remaining === 0) ticket.settle(ticket.failed);
        }
      }
    };
    const run = () => Promise.all(Array.from({ length: this.writeConcurrency }, worker)).then(() => undefined);
    p.writing = run().finally(() => {
      p.writing = null;
      if (p.count === 0) this.pending.delete(ns);
    });
    return p.writing;
  }

  /** Writes everything accepted so far. */
  async flush(): Promise<void> {
    await Promise.all([...this.pending.keys()].map((ns) => this.flushNamespace(ns, true)));
  }

  /** What waits for the store now, and what was accepted and written so far, over all namespaces (the server's memory log). */
  buffered(): { events: number; chars: number; accepted: number; written: number } {
    let events = 0;
    let chars = 0;
    for (const p of this.pending.values()) {
      events += p.count;
      chars += p.chars;
    }
    let accepted = 0;
    let written = 0;
    for (const s of this.stats.values()) {
      accepted += s.accepted;
      written += s.written;
    }
    return { events, chars, accepted, written };
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

/** A write worth trying again: anything but the store refusing the request itself (a 4xx AppError: bad namespace id). */
function isRetryable(err: unknown): boolean {
  return !(err instanceof AppError && err.status < 500);
}
