import { gridRange, moveLeftHandle, moveRightHandle, newInterval, panFocus, type TimeRange } from "~/lib/time/range.ts";

/** The four drag modes, applied on release. */
export type DragMode = "LeftHandle" | "RightHandle" | "Pan" | "NewInterval";

/** The pan handle is the bottom 20% of the graph. */
export const panHandleShare = 0.2;
/** How close (in view units of a 1200-wide graph) a press must be to a handle to grab it. */
export const handleGrab = 8;

export type Geometry = { width: number; height: number };

export function timeAt(global: TimeRange, geo: Geometry, x: number): number {
  const g = gridRange(global);
  return g.startMs + (x / geo.width) * (g.endMs - g.startMs);
}

export function xAt(global: TimeRange, geo: Geometry, t: number): number {
  const g = gridRange(global);
  return ((t - g.startMs) / (g.endMs - g.startMs)) * geo.width;
}

/** Which mode a press at (x, y) starts. */
export function modeAt(global: TimeRange, focus: TimeRange | null, geo: Geometry, x: number, y: number): DragMode {
  if (!focus) return "NewInterval";
  const left = xAt(global, geo, focus.startMs);
  const right = xAt(global, geo, focus.endMs);
  if (Math.abs(x - left) <= handleGrab && Math.abs(x - left) <= Math.abs(x - right)) return "LeftHandle";
  if (Math.abs(x - right) <= handleGrab) return "RightHandle";
  if (y >= geo.height * (1 - panHandleShare) && x > left && x < right) return "Pan";
  return "NewInterval";
}

/** The focus a drag from x0 to x1 in a mode gives (snapped and bounded by the time maths). */
export function dragResult(mode: DragMode, global: TimeRange, focus: TimeRange | null, geo: Geometry, x0: number, x1: number): TimeRange {
  const t0 = timeAt(global, geo, x0);
  const t1 = timeAt(global, geo, x1);
  if (focus && mode === "LeftHandle") return moveLeftHandle(global, focus, t1);
  if (focus && mode === "RightHandle") return moveRightHandle(global, focus, t1);
  if (focus && mode === "Pan") return panFocus(global, focus, t1 - t0);
  return newInterval(global, t0, t1);
}
