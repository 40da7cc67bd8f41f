import { timeRangeProblem } from "./bounds.ts";
import { bucketGrid, chooseBucketMs, shiftBuckets, snapDown, snapUp } from "./buckets.ts";

/**
 * Time selection rules: the global range the histogram covers and the focus
 * (brushed) range inside it. Milliseconds since the epoch; ranges are [startMs, endMs).
 */

export type TimeRange = { startMs: number; endMs: number };

/** The focus end must exceed its start by at least 0.001 ms. */
export const minFocusMs = 0.001;

export type DrawnGrid = TimeRange & { bucketMs: number; count: number; originMs: number };

/**
 * What the histogram draws for a global range: exactly the range [startMs, endMs], its buckets on round times
 * from originMs (the first bucket's start, at or before the range's start; the first and last buckets may be
 * cut by the range).
 */
export function gridRange(global: TimeRange): DrawnGrid {
  const grid = bucketGrid(global.startMs, global.endMs);
  return { startMs: global.startMs, endMs: global.endMs, bucketMs: grid.bucketMs, count: grid.count, originMs: grid.startMs };
}

/** Whether a global range is one the server accepts (lib/time/bounds.ts) at nowMs. */
export function isAllowedRange(range: TimeRange, nowMs: number): boolean {
  return timeRangeProblem({ lowerMs: range.startMs, upperMs: range.endMs }, nowMs) === null;
}

/** The last bucket boundary before t, or the range's start. */
function boundaryBefore(g: DrawnGrid, t: number): number {
  return Math.max(g.startMs, g.originMs + (Math.ceil((t - g.originMs) / g.bucketMs) - 1) * g.bucketMs);
}

/** Nearest bucket boundary of the global range's grid, kept inside the range (whose ends count as boundaries). */
export function snapToBucket(global: TimeRange, t: number): number {
  const g = gridRange(global);
  const snapped = Math.round((t - g.originMs) / g.bucketMs) * g.bucketMs + g.originMs;
  return Math.min(g.endMs, Math.max(g.startMs, snapped));
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/**
 * Left handle: snapped, between the global start and the focus end (less one bucket, so the focus never
 * collapses below the minimal step).
 */
export function moveLeftHandle(global: TimeRange, focus: TimeRange, t: number): TimeRange {
  const g = gridRange(global);
  const snapped = snapToBucket(global, t);
  const startMs = clamp(snapped, g.startMs, Math.max(g.startMs, boundaryBefore(g, focus.endMs)));
  return { startMs, endMs: focus.endMs };
}

/** Right handle: snapped, between the focus start (plus one bucket) and the global end. */
export function moveRightHandle(global: TimeRange, focus: TimeRange, t: number): TimeRange {
  const g = gridRange(global);
  const snapped = snapToBucket(global, t);
  const endMs = clamp(snapped, Math.min(g.endMs, focus.startMs + g.bucketMs), g.endMs);
  return { startMs: focus.startMs, endMs };
}

/** Pan: the focus keeps its width, moves by a whole number of buckets, and stays inside the global range. */
export function panFocus(global: TimeRange, focus: TimeRange, deltaMs: number): TimeRange {
  const g = gridRange(global);
  const width = focus.endMs - focus.startMs;
  const steps = Math.round(deltaMs / g.bucketMs);
  const startMs = clamp(focus.startMs + steps * g.bucketMs, g.startMs, Math.max(g.startMs, g.endMs - width));
  return { startMs, endMs: startMs + width };
}

/**
 * A new interval drawn from a to b (either order): outward to whole buckets, at least one bucket wide (or the
 * cut last bucket), never past the global range.
 */
export function newInterval(global: TimeRange, a: number, b: number): TimeRange {
  const g = gridRange(global);
  const lo = clamp(Math.min(a, b), g.startMs, g.endMs);
  const hi = clamp(Math.max(a, b), g.startMs, g.endMs);
  const floor = Math.max(g.startMs, g.originMs + Math.floor((lo - g.originMs) / g.bucketMs) * g.bucketMs);
  const startMs = Math.min(floor, boundaryBefore(g, g.endMs));
  let endMs = Math.min(g.endMs, g.originMs + Math.ceil((hi - g.originMs) / g.bucketMs) * g.bucketMs);
  if (endMs <= startMs) endMs = Math.min(g.endMs, startMs + g.bucketMs);
  return { startMs, endMs };
}

/** A focus is valid when it lies in the grid, ends after it starts (0.001 ms at least) and is whole ms. */
export function isValidFocus(global: TimeRange, focus: TimeRange): boolean {
  const g = gridRange(global);
  return (
    Number.isInteger(focus.startMs) &&
    Number.isInteger(focus.endMs) &&
    focus.endMs - focus.startMs >= minFocusMs &&
    focus.startMs >= g.startMs &&
    focus.endMs <= g.endMs
  );
}

/** Shift the global range back (-1) or forward (1) by 30 buckets; the focus moves with it. */
export function shiftGlobal(global: TimeRange, direction: -1 | 1): TimeRange {
  const step = chooseBucketMs(global.startMs, global.endMs) * shiftBuckets * direction;
  return { startMs: global.startMs + step, endMs: global.endMs + step };
}

/** Zoom: the focus becomes the global range (re-bucketed: a smaller span picks a smaller bucket). */
export function zoomToFocus(focus: TimeRange): TimeRange {
  return { startMs: focus.startMs, endMs: focus.endMs };
}

export const presets = [
  { label: "5m", ms: 5 * 60_000 },
  { label: "15m", ms: 15 * 60_000 },
  { label: "1h", ms: 3_600_000 },
  { label: "6h", ms: 6 * 3_600_000 },
  { label: "24h", ms: 24 * 3_600_000 },
  { label: "3d", ms: 3 * 86_400_000 },
  { label: "7d", ms: 7 * 86_400_000 },
] as const;

/** A preset duration ending now: the end is rounded up to a whole second so URLs stay short. */
export function endingAt(durationMs: number, nowMs: number): TimeRange {
  const endMs = snapUp(nowMs, 1000);
  return { startMs: endMs - durationMs, endMs };
}

/**
 * Jump: the same duration, centred on t. A range of seconds starts on a whole second (half of an odd number of
 * seconds would otherwise put half a second on both ends); a shorter one on a whole millisecond.
 */
export function centredOn(global: TimeRange, t: number): TimeRange {
  const width = global.endMs - global.startMs;
  const start = t - width / 2;
  const startMs = width >= 2000 ? Math.round(start / 1000) * 1000 : Math.round(start);
  return { startMs, endMs: startMs + width };
}

export { snapDown };
