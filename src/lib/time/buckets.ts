/**
 * Histogram time maths of spec section 9, shared by the store (SQL bucketing) and the UI (axis, brush).
 * All times in milliseconds since the epoch.
 */

export const histogramBucketCount = 120;
export const defaultBucketMs = 1000;

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;

/**
 * Bucket sizes, smallest first. The first six are spec section 9's (covering 2m, 10m, 1h, 2h, 10h, 20h
 * with 120 buckets); beyond 20h we continue with sizes that keep bucket edges on round wall-clock
 * times: 30m (60h), 1h (5d), 3h (15d), 6h (30d), 12h (60d), 1d (120d). Past 120 days, whole days.
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
 * The smallest bucket size whose 120 buckets, starting at `startMs` snapped down to that size,
 * reach `endMs`.
 */
export function chooseBucketMs(startMs: number, endMs: number): number {
  for (const size of bucketSizesMs) {
    if (snapDown(startMs, size) + histogramBucketCount * size >= endMs) return size;
  }
  let days = Math.max(1, Math.ceil((endMs - startMs) / (histogramBucketCount * day)));
  while (snapDown(startMs, days * day) + histogramBucketCount * days * day < endMs) days++;
  return days * day;
}

export type BucketGrid = { startMs: number; bucketMs: number; count: number };

/** The 120-bucket grid a histogram over [startMs, endMs) is drawn on. */
export function bucketGrid(startMs: number, endMs: number): BucketGrid {
  const bucketMs = chooseBucketMs(startMs, endMs);
  return {
    startMs: snapDown(startMs, bucketMs),
    bucketMs,
    count: histogramBucketCount,
  };
}

/** Index of the bucket holding t, or -1 outside the grid. */
export function bucketIndex(grid: BucketGrid, t: number): number {
  const i = Math.floor((t - grid.startMs) / grid.bucketMs);
  return i >= 0 && i < grid.count ? i : -1;
}

/** Shifting the global range moves it by a quarter of the buckets (spec section 9: 30 buckets). */
export const shiftBuckets = 30;

export function shiftRange(
  range: { startMs: number; endMs: number },
  direction: -1 | 1,
): { startMs: number; endMs: number } {
  const step = chooseBucketMs(range.startMs, range.endMs) * shiftBuckets * direction;
  return { startMs: range.startMs + step, endMs: range.endMs + step };
}
