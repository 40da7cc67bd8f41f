import { localOffset, type TimeZoneMode } from "./ticks.ts";
import { zonedParts } from "./zone.ts";

/**
 * Typed times. The clause editor's timestamps are "YYYY-MM-DD HH:MM:SS" in UTC, accepted only when the text
 * round-trips exactly (format(parse(text)) === text), so "2026-02-30 10:00:00" or a missing zero is refused. The
 * jump-to-time box reads ISO 8601 and bare times of today (parseJumpTime).
 */

const pattern = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;
const pad = (n: number, w = 2) => String(n).padStart(w, "0");

export function formatUtc(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** Milliseconds of a typed UTC time, or null unless the text round-trips exactly. */
export function parseTypedUtc(text: string): number | null {
  const match = pattern.exec(text);
  if (!match) return null;
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  const ms = Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
  if (!Number.isFinite(ms)) return null;
  return formatUtc(ms) === text ? ms : null;
}

/** The jump-to-time box's placeholder: the date a week ago, plus 12:34:56. */
export function typedTimePlaceholder(nowMs: number): string {
  return `${formatUtc(nowMs - 7 * 86_400_000).slice(0, 10)} 12:34:56`;
}

/** A time shown in the chosen zone, to the second (the millisecond part when it has one). */
export function formatInZone(ms: number, mode: "UTC" | "Local"): string {
  if (mode === "UTC") return `${formatUtc(ms)}${ms % 1000 ? `.${pad(Math.floor(ms % 1000), 3)}` : ""} UTC`;
  const d = new Date(ms);
  const base = `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  return `${base} ${sign}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
}

export type JumpTime = { ok: true; ms: number } | { ok: false; reason: string };

export const jumpTimeHint = "Type an ISO 8601 time (2026-11-27T06:55:00, Z for UTC) or a time of today (06:55)";

const isoPattern = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const clockPattern = /^(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Minutes east of UTC of "Z", "+05:30", "-0800" or "+02"; null when out of range. */
function offsetOf(text: string): number | null {
  if (text.toUpperCase() === "Z") return 0;
  const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(text);
  if (!m) return null;
  const hours = Number(m[2]);
  const minutes = Number(m[3] ?? 0);
  if (hours > 14 || minutes > 59) return null;
  return (m[1] === "-" ? -1 : 1) * (hours * 60 + minutes);
}

/**
 * The moment of wall-clock fields in the zone, or null when they name no real date or time (February 30, 24:00).
 * Local times take the offset in force at that moment (the second guess settles a change of daylight saving).
 */
function moment(
  f: { year: number; month: number; day: number; hours: number; minutes: number; seconds: number; millis: number },
  zone: TimeZoneMode | { offset: number },
  offsetMinutes: (t: number) => number,
): number | null {
  if (f.month < 1 || f.month > 12 || f.day < 1 || f.hours > 23 || f.minutes > 59 || f.seconds > 59) return null;
  const wall = Date.UTC(f.year, f.month - 1, f.day, f.hours, f.minutes, f.seconds, f.millis);
  if (!Number.isFinite(wall) || new Date(wall).getUTCDate() !== f.day) return null;
  if (typeof zone === "object") return wall - zone.offset * 60_000;
  if (zone === "UTC") return wall;
  const guess = wall - offsetMinutes(wall) * 60_000;
  return wall - offsetMinutes(guess) * 60_000;
}

/**
 * The jump-to-time box: ISO 8601 ("2026-11-27T06:55:00", a space for the T, seconds and fractions optional, "Z" or an
 * offset for a zone of its own) or a bare time ("06:55", "06:55:30"), which means today. Without a zone the text is
 * read in the display zone. Anything else is refused with the reason, in words.
 */
export function parseJumpTime(
  text: string,
  zone: TimeZoneMode,
  nowMs: number,
  offsetMinutes: (t: number) => number = localOffset,
): JumpTime {
  const input = text.trim();
  if (input === "") return { ok: false, reason: jumpTimeHint };
  if (input.length > 64) return { ok: false, reason: `That is not a time. ${jumpTimeHint}.` };
  const iso = isoPattern.exec(input);
  const clock = iso ? null : clockPattern.exec(input);
  if (!iso && !clock) return { ok: false, reason: `"${input}" is not a time. ${jumpTimeHint}.` };
  const today = zonedParts(nowMs, zone, offsetMinutes);
  const [y, mo, d, h, mi, s, frac, off] = iso
    ? [iso[1], iso[2], iso[3], iso[4] ?? "0", iso[5] ?? "0", iso[6], iso[7], iso[8]]
    : [String(today.year), String(today.month), String(today.day), clock![1], clock![2], clock![3], clock![4], clock![5]];
  const fields = {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hours: Number(h),
    minutes: Number(mi),
    seconds: Number(s ?? 0),
    millis: frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0,
  };
  let target: TimeZoneMode | { offset: number } = zone;
  if (off) {
    const offset = offsetOf(off);
    if (offset === null) return { ok: false, reason: `"${off}" is not a time zone offset (use Z, or one like +02:00).` };
    target = { offset };
  }
  if (fields.hours > 23 || fields.minutes > 59 || fields.seconds > 59) {
    return { ok: false, reason: `${h}:${mi}${s ? `:${s}` : ""} is not a time of day (00:00:00 to 23:59:59).` };
  }
  const ms = moment(fields, target, offsetMinutes);
  if (ms === null) return { ok: false, reason: `${y}-${mo}-${d} is not a date.` };
  return { ok: true, ms };
}
