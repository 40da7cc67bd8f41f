/**
 * Token bucket: `rate` events per second on average, bursts up to `burst`. One per namespace (or link),
 * so one noisy publisher cannot starve the others. rate 0 means no limit (self-hosted default).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Takes up to `n` tokens; returns how many were granted. */
  take(n: number, now: number): number {
    if (this.rate <= 0) return n;
    const elapsed = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.tokens = Math.min(this.burst, this.tokens + elapsed * this.rate);
    const granted = Math.min(n, Math.floor(this.tokens));
    this.tokens -= granted;
    return granted;
  }
}

export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  /** Bursts of ten seconds' worth of events are allowed ("short bursts", spec section 9). */
  constructor(
    private readonly rate: number,
    private readonly burst = rate * 10,
  ) {}

  get isUnlimited(): boolean {
    return this.rate <= 0;
  }

  take(key: string, n: number, now: number): number {
    if (this.rate <= 0) return n;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size > 100_000) this.buckets.clear();
      bucket = new TokenBucket(this.rate, this.burst, now);
      this.buckets.set(key, bucket);
    }
    return bucket.take(n, now);
  }
}
