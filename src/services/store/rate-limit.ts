/**
 * Token bucket per namespace: refills at `ratePerSecond`, holds at most `burst` tokens, so a namespace
 * averages the rate and may burst above it briefly (spec section 9). A rate of 0 means no limit.
 */
export type RateLimit = { ratePerSecond: number; burst: number };

type Bucket = { tokens: number; updatedMs: number };

export class NamespaceRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
  ) {}

  get isUnlimited(): boolean {
    return this.limit.ratePerSecond <= 0;
  }

  /** How many of `wanted` events may pass now; the rest are over the limit. */
  take(namespaceId: string, wanted: number): number {
    if (this.isUnlimited) return wanted;
    const nowMs = this.now();
    const bucket = this.buckets.get(namespaceId) ?? { tokens: this.limit.burst, updatedMs: nowMs };
    const elapsed = Math.max(0, nowMs - bucket.updatedMs) / 1000;
    bucket.tokens = Math.min(this.limit.burst, bucket.tokens + elapsed * this.limit.ratePerSecond);
    bucket.updatedMs = nowMs;
    const granted = Math.min(wanted, Math.floor(bucket.tokens));
    bucket.tokens -= granted;
    this.buckets.set(namespaceId, bucket);
    return granted;
  }

  /** Forgets buckets that have been full for a while, so idle namespaces cost no memory. */
  sweep(): void {
    const nowMs = this.now();
    const fullAfterMs = (this.limit.burst / Math.max(this.limit.ratePerSecond, 1e-9)) * 1000;
    for (const [ns, b] of this.buckets) if (nowMs - b.updatedMs > fullAfterMs) this.buckets.delete(ns);
  }
}

/** A burst of ten seconds' worth of events on top of the average. */
export function rateLimitFor(ratePerSecond: number): RateLimit {
  return { ratePerSecond, burst: Math.max(1, ratePerSecond * 10) };
}
