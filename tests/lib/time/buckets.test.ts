import { describe, expect, test } from "bun:test";
import { bucketGrid, bucketIndex, chooseBucketMs, histogramBucketCount, shiftRange } from "~/lib/time/buckets.ts";

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;
const t0 = Date.UTC(2026, 0, 10, 12, 0, 0);

describe("histogram bucket choice", () => {
  test("the spec's six sizes cover 2m, 10m, 1h, 2h, 10h, 20h", () => {
    expect(chooseBucketMs(t0 - 2 * m, t0)).toBe(1 * s);
    expect(chooseBucketMs(t0 - 10 * m, t0)).toBe(5 * s);
    expect(chooseBucketMs(t0 - 1 * h, t0)).toBe(30 * s);
    expect(chooseBucketMs(t0 - 2 * h, t0)).toBe(1 * m);
    expect(chooseBucketMs(t0 - 10 * h, t0)).toBe(5 * m);
    expect(chooseBucketMs(t0 - 20 * h, t0)).toBe(10 * m);
  });

  test("the smallest size whose 120 buckets cover the span is chosen", () => {
    expect(chooseBucketMs(t0 - 2 * m - 1, t0)).toBe(5 * s);
    expect(chooseBucketMs(t0 - 61 * m, t0)).toBe(1 * m);
    expect(chooseBucketMs(t0 - 5 * s, t0)).toBe(1 * s);
  });

  test("only the span counts: a range starting off a bucket boundary keeps the spec's size", () => {
    expect(chooseBucketMs(t0 + 500, t0 + 500 + 2 * m)).toBe(1 * s);
    expect(chooseBucketMs(t0 + 7_000 - h, t0 + 7_000)).toBe(30 * s);
  });

  test("beyond 20 hours: 30m, 1h, 3h, 6h, 12h, 1d, then whole days", () => {
    expect(chooseBucketMs(t0 - 24 * h, t0)).toBe(30 * m);
    expect(chooseBucketMs(t0 - 3 * d, t0)).toBe(1 * h);
    expect(chooseBucketMs(t0 - 7 * d, t0)).toBe(3 * h);
    expect(chooseBucketMs(t0 - 30 * d, t0)).toBe(6 * h);
    expect(chooseBucketMs(t0 - 60 * d, t0)).toBe(12 * h);
    expect(chooseBucketMs(t0 - 90 * d, t0)).toBe(1 * d);
    expect(chooseBucketMs(t0 - 365 * d, t0)).toBe(4 * d);
  });

  test("every grid covers the range on round bucket boundaries, from the bucket holding its start (at most 121)", () => {
    for (const span of [1, 999, 2 * m, 7 * m, h, 3 * h, 19 * h, 2 * d, 400 * d]) {
      for (const start of [t0, t0 + 1, t0 + 12_345]) {
        const g = bucketGrid(start, start + span);
        expect(g.startMs % g.bucketMs).toBe(0);
        expect(g.startMs).toBeLessThanOrEqual(start);
        expect(g.startMs + g.bucketMs).toBeGreaterThan(start);
        expect(g.count).toBeLessThanOrEqual(histogramBucketCount + 1);
        expect(g.startMs + g.count * g.bucketMs).toBeGreaterThanOrEqual(start + span);
        expect(g.startMs + (g.count - 1) * g.bucketMs).toBeLessThan(start + span);
        expect(Number.isInteger(g.bucketMs)).toBe(true);
      }
    }
    expect(bucketGrid(t0 - h, t0).count).toBe(120);
    expect(bucketGrid(t0 + 7_000 - h, t0 + 7_000)).toEqual({ startMs: t0 - h, bucketMs: 30 * s, count: 121 });
  });

  test("huge, reversed and non-finite ranges are answered at once: a size in closed form or a clear error", () => {
    const started = performance.now();
    expect(chooseBucketMs(0, 1e300)).toBe(Math.ceil(1e300 / (120 * d)) * d);
    expect(bucketGrid(-1e300, 1e300).count).toBeLessThanOrEqual(120);
    expect(chooseBucketMs(0, Number.MAX_VALUE)).toBeGreaterThan(0);
    for (const [a, b] of [
      [0, Number.NaN],
      [Number.NaN, 0],
      [0, Number.POSITIVE_INFINITY],
      [Number.NEGATIVE_INFINITY, 0],
      [t0, t0 - h],
      [t0, t0],
      [-1e300, Number.MAX_VALUE],
    ] as const) {
      expect(() => chooseBucketMs(a, b)).toThrow("time range must be finite numbers with its end after its start");
    }
    expect(chooseBucketMs(-2 * h, -h)).toBe(30 * s);
    expect(performance.now() - started).toBeLessThan(50);
  });

  test("bucket index and 30-bucket shifts", () => {
    const g = bucketGrid(t0 - h, t0);
    expect(bucketIndex(g, g.startMs)).toBe(0);
    expect(bucketIndex(g, g.startMs + g.bucketMs * 120 - 1)).toBe(119);
    expect(bucketIndex(g, g.startMs - 1)).toBe(-1);
    expect(shiftRange({ startMs: t0 - h, endMs: t0 }, -1)).toEqual({ startMs: t0 - h - 15 * m, endMs: t0 - 15 * m });
  });
});
