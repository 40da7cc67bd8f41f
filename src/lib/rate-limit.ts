/**
 * The one token bucket of the server: refills at `ratePerSecond`, holds at most `burst` tokens, so a key
 * averages the rate and may burst above it briefly. A rate of 0 means no limit.
 */
export type RateLimit = { ratePerSecond: number; burst: number };

/** A burst of ten seconds' worth on top of the average. */
export function rateLimitFor(ratePerSecond: number): RateLimit {
  return { ratePerSecond, burst: Math.max(1, ratePerSecond * 10) };
}

export class TokenBucket {
  private tokens: number;
  private updatedMs: number;
  private ratePerSecond: number;
  private burst: number;

  constructor(limit: RateLimit, nowMs: number) {
    this.ratePerSecond = limit.ratePerSecond;
    this.burst = limit.burst;
    this.tokens = limit.burst;
    this.updatedMs = nowMs;
  }

  /** A clock that steps back refills nothing (and is not counted twice when it catches up). */
  private refill(nowMs: number): void {
    if (nowMs > this.updatedMs) {
      this.tokens += ((nowMs - this.updatedMs) / 1000) * this.ratePerSecond;
      this.updatedMs = nowMs;
    }
    if (this.tokens > this.burst) this.tokens = this.burst;
  }

  /**
   * A new rate and burst, applied from the last refill on: for a share of a budget that changes as it is split
   * among more or fewer users. What is held above the new burst is dropped at the next look.
   */
  setLimit(ratePerSecond: number, burst: number): void {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
  }

  /** Takes up to `n` tokens; returns how many were granted. */
  take(n: number, nowMs: number): number {
    if (this.ratePerSecond <= 0) return n;
    this.refill(nowMs);
    const granted = Math.max(0, Math.min(n, Math.floor(this.tokens)));
    this.tokens -= granted;
    return granted;
  }

  /** The tokens there now, fractions included; below zero while a debt (see spend) is being paid back. */
  available(nowMs: number): number {
    if (this.ratePerSecond <= 0) return Number.POSITIVE_INFINITY;
    this.refill(nowMs);
    return this.tokens;
  }

  /** Spends `n` tokens after the fact, more than there are if need be: the debt refills before anything more is granted. */
  spend(n: number): void {
    if (this.ratePerSecond > 0) this.tokens -= n;
  }

  /** Milliseconds until `n` tokens are there (0: now). */
  waitMs(n: number, nowMs: number): number {
    if (this.ratePerSecond <= 0) return 0;
    this.refill(nowMs);
    if (this.tokens >= n) return 0;
    return Math.ceil(((n - this.tokens) / this.ratePerSecond) * 1000);
  }

  isFull(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= this.burst;
  }
}

/**
 * A bucket per key (namespace, link, client address). At most `maxKeys` buckets are held: past that the least
 * recently used one is forgotten (a forgotten key starts again with a full bucket), so a flood of new keys costs
 * bounded memory; a global limit beside it is what bounds such a flood's rate.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(
    readonly limit: RateLimit,
    options: {
      maxKeys?: number;
      now?: () => number;
      /** Records what it grants for a cluster's other nodes to spend (drainConsumed). */
      isShared?: boolean;
    } = {},
  ) {
    this.maxKeys = Math.max(1, options.maxKeys ?? 100_000);
    this.now = options.now ?? Date.now;
    this.consumed = options.isShared ? new Map() : null;
  }

  get isUnlimited(): boolean {
    return this.limit.ratePerSecond <= 0;
  }

  get size(): number {
    return this.buckets.size;
  }

  private bucket(key: string, nowMs: number): TokenBucket {
    let bucket = this.buckets.get(key);
    if (bucket) {
      // Map order is insertion order: moving the key to the end keeps the least recently used first.
      this.buckets.delete(key);
    } else {
      bucket = new TokenBucket(this.limit, nowMs);
      if (this.buckets.size >= this.maxKeys) {
        const oldest = this.buckets.keys().next();
        if (!oldest.done) this.buckets.delete(oldest.value);
      }
    }
    this.buckets.set(key, bucket);
    return bucket;
  }

  /** How many of `n` may pass now; the rest are over the limit. */
  take(key: string, n: number, nowMs = this.now()): number {
    if (this.isUnlimited) return n;
    const granted = this.bucket(key, nowMs).take(n, nowMs);
    if (this.consumed && granted > 0) this.consumed.set(key, (this.consumed.get(key) ?? 0) + granted);
    return granted;
  }

  /** What was granted per key since the last drain, when shared (a cluster's other nodes spend it). */
  private consumed: Map<string, number> | null;

  drainConsumed(): Map<string, number> {
    const drained = this.consumed ?? new Map<string, number>();
    if (this.consumed) this.consumed = new Map();
    return drained;
  }

  /** Spends what another server node granted under the same key: the shared limit holds across nodes. */
  spend(key: string, n: number, nowMs = this.now()): void {
    if (this.isUnlimited || !(n > 0)) return;
    const bucket = this.bucket(key, nowMs);
    bucket.available(nowMs);
    bucket.spend(n);
  }

  /** Milliseconds until `key` may pass `n` (0: now), taking nothing. */
  waitMs(key: string, n: number, nowMs = this.now()): number {
    if (this.isUnlimited) return 0;
    return this.buckets.get(key)?.waitMs(n, nowMs) ?? 0;
  }

  /** Forgets buckets that are full again, so idle keys cost no memory. */
  sweep(nowMs = this.now()): void {
    for (const [key, bucket] of this.buckets) if (bucket.isFull(nowMs)) this.buckets.delete(key);
  }
}

/**
 * One request per client address and the same request counted globally: a client over its own budget is refused
 * without spending the global one, so one noisy client cannot use up everyone's share.
 */
export class ClientRateLimit {
  private readonly clients: RateLimiter;
  private readonly global: TokenBucket;

  constructor(
    limits: { perClient: RateLimit; global: RateLimit; maxClients?: number },
    private readonly now: () => number = Date.now,
    /** Records what it admits for a cluster's other nodes to spend (drainConsumed). */
    private readonly isShared = false,
  ) {
    this.clients = new RateLimiter(limits.perClient, { maxKeys: limits.maxClients ?? 10_000, now, isShared });
    this.global = new TokenBucket(limits.global, now());
  }

  /**
   * Admits `n` (one request, or a size in bytes) from `client`: 0, or the milliseconds until it would be admitted
   * (nothing taken then).
   */
  admit(client: string, n = 1): number {
    const nowMs = this.now();
    const wait = this.waitMs(client, n, nowMs);
    if (wait > 0) return wait;
    this.clients.take(client, n, nowMs);
    this.global.take(n, nowMs);
    if (this.isShared) this.globalConsumed += n;
    return 0;
  }

  /** Milliseconds until `client` may pass `n` (0: now), taking nothing: to ask several limits before spending any. */
  waitMs(client: string, n = 1, nowMs = this.now()): number {
    const clientWait = this.clients.waitMs(client, n, nowMs);
    if (clientWait > 0) return clientWait;
    return this.global.waitMs(n, nowMs);
  }

  private globalConsumed = 0;

  drainConsumed(): { clients: Map<string, number>; global: number } {
    const global = this.globalConsumed;
    this.globalConsumed = 0;
    return { clients: this.clients.drainConsumed(), global };
  }

  /** What another node admitted: spent here too, so the per-client and global budgets hold across nodes. */
  spend(clients: Iterable<[string, number]>, global: number): void {
    const nowMs = this.now();
    for (const [client, n] of clients) this.clients.spend(client, n, nowMs);
    if (global > 0) {
      this.global.available(nowMs);
      this.global.spend(global);
    }
  }
}
