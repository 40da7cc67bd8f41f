import { AppError } from "~/lib/errors.ts";

/**
 * Histogram time maths, shared by the store (SQL bucketing) and the UI (axis, brush).
 * All times in milliseconds since the epoch.
 */

export const histogramBucketCount = 120;

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;

/**
 * Bucket sizes, smallest first. The first six are the product's own (covering 2m, 10m, 1h, 2h, 10h, 20h
 * with 120 buckets); beyond 20h we continue with round sizes: 30m (60h), 1h (5d), 3h (15d), 6h (30d), 12h (60d), 1d (120d). Past 120 days, whole days.
 */
export const bucketSizesMs = [
  1 * second,
  5 * second,
  30 * second,
  1 * minute,
  5 * minute,
  10 * minute,
  30 * minute,
  1 * hour,
  3 * hour,
  6 * hour,
  12 * hour,
  1 * day,
] as const;

/** Snaps t down to a multiple of size (UTC epoch aligned). */
export function snapDown(t: number, size: number): number {
  return Math.floor(t / size) * size;
}

export function snapUp(t: number, size: number): number {
  return Math.ceil(t / size) * size;
}

/**
 * The smallest size whose 120 buckets cover the span (the 1h preset: 30 s). Closed form: past
 * the listed sizes, whole days. A range that is not finite or ends before it starts is refused, so nothing
 * here ever loops on what a client sent.
 */
export function chooseBucketMs(startMs: number, endMs: number): number {
  const span = endMs - startMs;
  if (!Number.isFinite(span) || span <= 0) {
    throw new AppError("BAD_REQUEST", "time range must be finite numbers with its end after its start");
  }
  const size = bucketSizesMs.find((s) => histogramBucketCount * s >= span);
  return size ?? Math.ceil(span / (histogramBucketCount * day)) * day;
}

export type BucketGrid = { startMs: number; bucketMs: number; count: number };

/**
 * The grid a histogram over [startMs, endMs) is counted on: buckets on round times (multiples of the size), from
 * the one holding the start to the one holding the end, so at most 121 (the first and last cut by the range).
 */
export function bucketGrid(startMs: number, endMs: number): BucketGrid {
  const bucketMs = chooseBucketMs(startMs, endMs);
  const first = snapDown(startMs, bucketMs);
  return { startMs: first, bucketMs, count: Math.max(1, Math.ceil((endMs - first) / bucketMs)) };
}

/** Index of the bucket holding t, or -1 outside the grid. */
export function bucketIndex(grid: BucketGrid, t: number): number {
  const i = Math.floor((t - grid.startMs) / grid.bucketMs);
  return i >= 0 && i < grid.count ? i : -1;
}

/** Shifting the global range moves it by a quarter of the buckets: 30. */
export const shiftBuckets = 30;

export function shiftRange(range: { startMs: number; endMs: number }, direction: -1 | 1): { startMs: number; endMs: number } {
  const step = chooseBucketMs(range.startMs, range.endMs) * shiftBuckets * direction;
  return { startMs: range.startMs + step, endMs: range.endMs + step };
}
