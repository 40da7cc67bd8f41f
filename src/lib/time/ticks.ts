/** Axis ticks: about 12 labels, the step picked from a fixed list. */

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

export const tickStepsMs = [
  1 * s,
  5 * s,
  15 * s,
  30 * s,
  1 * m,
  5 * m,
  15 * m,
  30 * m,
  60 * m,
  3 * h,
  4 * h,
  6 * h,
  12 * h,
  1 * d,
  3 * d,
  7 * d,
  30 * d,
] as const;

export const targetTickCount = 12;

/** The smallest listed step that gives at most about 12 labels over the span; past the list, whole 30 days. */
export function chooseTickStep(spanMs: number): number {
  const step = tickStepsMs.find((s) => spanMs / s <= targetTickCount);
  if (step !== undefined) return step;
  const months = Math.ceil(spanMs / (targetTickCount * 30 * d));
  return Number.isFinite(months) ? Math.max(1, months) * 30 * d : 30 * d;
}

export type TimeZoneMode = "UTC" | "Local";

/**
 * Tick times inside [startMs, endMs], aligned to the step in the display zone: a 6 h step lands on 00, 06,
 * 12, 18 o'clock of the zone shown. offsetMinutes(t) is the zone's offset from UTC (east positive).
 */
export function ticks(startMs: number, endMs: number, mode: TimeZoneMode, offsetMinutes: (t: number) => number = localOffset): number[] {
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs) || endMs < startMs) return [];
  const step = chooseTickStep(endMs - startMs);
  const offset = (t: number) => (mode === "UTC" ? 0 : offsetMinutes(t) * m);
  const out: number[] = [];
  // Align in zone time, then convert back; offsets are recomputed per tick so DST shifts are honoured.
  let zoned = Math.ceil((startMs + offset(startMs)) / step) * step;
  for (let i = 0; i <= 2 * targetTickCount + 2; i++) {
    const t = zoned - offset(zoned);
    if (t > endMs) break;
    if (t >= startMs) out.push(t);
    zoned += step;
  }
  return out;
}

export function localOffset(t: number): number {
  return -new Date(t).getTimezoneOffset();
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** A tick label: clock time for sub-day steps (with the date at midnight), date for day steps. */
export function tickLabel(t: number, stepMs: number, mode: TimeZoneMode): string {
  const date = new Date(t);
  const utc = mode === "UTC";
  const Y = utc ? date.getUTCFullYear() : date.getFullYear();
  const M = (utc ? date.getUTCMonth() : date.getMonth()) + 1;
  const D = utc ? date.getUTCDate() : date.getDate();
  const hh = utc ? date.getUTCHours() : date.getHours();
  const mm = utc ? date.getUTCMinutes() : date.getMinutes();
  const ss = utc ? date.getUTCSeconds() : date.getSeconds();
  const day = `${Y}-${pad(M)}-${pad(D)}`;
  if (stepMs >= d) return day;
  if (hh === 0 && mm === 0 && ss === 0) return `${pad(M)}-${pad(D)}`;
  if (stepMs < m) return `${pad(hh)}:${pad(mm)}:${pad(ss)}`;
  return `${pad(hh)}:${pad(mm)}`;
}
