import { describe, expect, test } from "bun:test";
import { bucketGrid, bucketIndex, chooseBucketMs, histogramBucketCount, shiftRange } from "~/lib/time/buckets.ts";

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;
const t0 = Date.UTC(2026, 0, 10, 12, 0, 0);

describe("histogram bucket choice (spec section 9)", () => {
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

  test("an unaligned start counts: the grid starts at the snapped start", () => {
    // 2 minutes starting half a second past a second boundary needs 121 one-second buckets: too many.
    expect(chooseBucketMs(t0 + 500, t0 + 500 + 2 * m)).toBe(5 * s);
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

  test("every grid has 120 buckets covering the range, on bucket boundaries", () => {
    for (const span of [1, 999, 2 * m, 7 * m, 3 * h, 19 * h, 2 * d, 400 * d]) {
      for (const start of [t0, t0 + 1, t0 + 12_345]) {
        const g = bucketGrid(start, start + span);
        expect(g.count).toBe(histogramBucketCount);
        expect(g.startMs % g.bucketMs).toBe(0);
        expect(g.startMs).toBeLessThanOrEqual(start);
        expect(g.startMs + g.count * g.bucketMs).toBeGreaterThanOrEqual(start + span);
        expect(Number.isInteger(g.bucketMs)).toBe(true);
      }
    }
  });

  test("bucket index and 30-bucket shifts", () => {
    const g = bucketGrid(t0 - h, t0);
    expect(bucketIndex(g, g.startMs)).toBe(0);
    expect(bucketIndex(g, g.startMs + g.bucketMs * 120 - 1)).toBe(119);
    expect(bucketIndex(g, g.startMs - 1)).toBe(-1);
    expect(shiftRange({ startMs: t0 - h, endMs: t0 }, -1)).toEqual({ startMs: t0 - h - 15 * m, endMs: t0 - 15 * m });
  });
});
