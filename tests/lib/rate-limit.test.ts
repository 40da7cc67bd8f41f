import { describe, expect, test } from "bun:test";
import { ClientRateLimit, RateLimiter, TokenBucket } from "~/lib/rate-limit.ts";

describe("token bucket", () => {
  test("averages the rate, allows a burst, refills with time", () => {
    let now = 0;
    const limiter = new RateLimiter({ ratePerSecond: 100, burst: 1000 }, { now: () => now });
    expect(limiter.take("a", 1500)).toBe(1000); // the burst
    expect(limiter.take("a", 10)).toBe(0);
    now += 500;
    expect(limiter.take("a", 100)).toBe(50); // half a second refills 50
    expect(limiter.take("b", 10)).toBe(10); // keys have their own buckets
    now += 60_000;
    expect(limiter.take("a", 5000)).toBe(1000); // never more than the burst
    let passed = 0;
    for (let i = 0; i < 100; i++) {
      now += 100;
      passed += limiter.take("a", 50);
    }
    expect(passed).toBe(1000); // 10 s at 100/s
  });

  test("0 means unlimited", () => {
    const limiter = new RateLimiter({ ratePerSecond: 0, burst: 0 });
    expect(limiter.take("a", 1_000_000)).toBe(1_000_000);
    expect(limiter.waitMs("a", 1)).toBe(0);
  });

  test("a clock that steps back refills nothing, and the time is not counted twice when it catches up", () => {
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 10 }, 10_000);
    expect(bucket.take(10, 10_000)).toBe(10);
    expect(bucket.take(1, 5_000)).toBe(0); // five seconds back
    expect(bucket.take(1, 10_000)).toBe(0); // back where it was: still empty
    expect(bucket.take(5, 10_500)).toBe(5); // half a second later: 5, not 5 + 50
    expect(bucket.take(1, 10_500)).toBe(0);
  });

  test("says how long until the next token", () => {
    const bucket = new TokenBucket({ ratePerSecond: 2, burst: 1 }, 0);
    expect(bucket.waitMs(1, 0)).toBe(0);
    expect(bucket.take(1, 0)).toBe(1);
    expect(bucket.waitMs(1, 0)).toBe(500);
    expect(bucket.waitMs(1, 250)).toBe(250);
  });

  test("available and spend: fractions count, a debt is refilled before anything more is there", () => {
    const bucket = new TokenBucket({ ratePerSecond: 100, burst: 50 }, 0);
    expect(bucket.available(0)).toBe(50);
    bucket.spend(80);
    expect(bucket.available(0)).toBe(-30);
    expect(bucket.take(1, 0)).toBe(0);
    expect(bucket.available(305)).toBeCloseTo(0.5, 9);
    expect(bucket.available(10_000)).toBe(50);
  });

  test("setLimit: the new rate refills from the last look on, and the new burst caps what is held", () => {
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 100 }, 0);
    bucket.spend(100);
    bucket.setLimit(1000, 20);
    expect(bucket.available(10)).toBe(10);
    expect(bucket.available(1000)).toBe(20);
    bucket.setLimit(1000, 5);
    expect(bucket.available(1000)).toBe(5);
  });

  test("holds at most maxKeys buckets, forgetting the least recently used", () => {
    let now = 0;
    const limiter = new RateLimiter({ ratePerSecond: 1, burst: 1 }, { maxKeys: 3, now: () => now });
    for (const key of ["a", "b", "c"]) expect(limiter.take(key, 1)).toBe(1);
    expect(limiter.take("a", 1)).toBe(0); // a is now the most recently used
    for (let i = 0; i < 10_000; i++) limiter.take(`flood-${i}`, 1);
    expect(limiter.size).toBe(3);
    now += 1;
    limiter.sweep(now + 10_000);
    expect(limiter.size).toBe(0);
  });
});

describe("per client and global", () => {
  test("a client over its budget is refused without spending the global one; the global budget bounds many clients", () => {
    let now = 0;
    const limit = new ClientRateLimit({ perClient: { ratePerSecond: 1, burst: 3 }, global: { ratePerSecond: 10, burst: 10 } }, () => now);
    for (let i = 0; i < 3; i++) expect(limit.admit("a")).toBe(0);
    expect(limit.admit("a")).toBe(1000);
    for (let i = 0; i < 100; i++) limit.admit("a"); // refused: costs the others nothing
    for (let i = 0; i < 7; i++) expect(limit.admit(`client-${i}`)).toBe(0);
    expect(limit.admit("fresh")).toBe(100); // the global budget is spent
    now += 100;
    expect(limit.admit("fresh")).toBe(0);
  });
});
