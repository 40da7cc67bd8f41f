import { localOffset, type TimeZoneMode } from "./ticks.ts";

/**
 * Times as every screen shows them, in the one display zone the user chose (UTC or the browser's Local zone): the
 * clock, the date when it is not today in that zone, and the zone's name beside it.
 */

const pad = (n: number, w = 2) => String(n).padStart(w, "0");
const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;

/** The wall-clock fields of a moment in the zone: UTC, or local by the offset (minutes east of UTC) at that moment. */
export function zonedParts(ms: number, zone: TimeZoneMode, offsetMinutes: (t: number) => number = localOffset) {
  const shifted = new Date(zone === "UTC" ? ms : ms + offsetMinutes(ms) * 60_000);
  return {
    year: shifted.getUTCFullYear(),
    month: shifted.getUTCMonth() + 1,
    day: shifted.getUTCDate(),
    hours: shifted.getUTCHours(),
    minutes: shifted.getUTCMinutes(),
    seconds: shifted.getUTCSeconds(),
    millis: shifted.getUTCMilliseconds(),
  };
}

/**
 * The zone's short name at a moment: "UTC", or the browser's own abbreviation of Local ("EST", "CET"), else its offset
 * ("UTC+05:30") where the browser has no abbreviation for it.
 */
export function zoneName(zone: TimeZoneMode, ms: number = Date.now(), offsetMinutes: (t: number) => number = localOffset): string {
  if (zone === "UTC") return "UTC";
  // The browser names only its own zone.
  if (offsetMinutes(ms) !== localOffset(ms)) return offsetName(offsetMinutes(ms));
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" })
      .formatToParts(new Date(ms))
      .find((p) => p.type === "timeZoneName")?.value;
    if (part && !/^GMT[+-]/.test(part)) return part === "GMT" && offsetMinutes(ms) === 0 ? "UTC" : part;
  } catch {
    // no Intl zone names here: the offset says it as well
  }
  return offsetName(offsetMinutes(ms));
}

/** "UTC+05:30", "UTC-04:00", "UTC" for an offset in minutes east of UTC. */
export function offsetName(minutes: number): string {
  if (minutes === 0) return "UTC";
  const sign = minutes > 0 ? "+" : "-";
  const abs = Math.abs(minutes);
  return `UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** Whether two moments fall on the same calendar day in the zone. */
export function isSameDay(a: number, b: number, zone: TimeZoneMode, offsetMinutes: (t: number) => number = localOffset): boolean {
  const x = zonedParts(a, zone, offsetMinutes);
  const y = zonedParts(b, zone, offsetMinutes);
  return x.year === y.year && x.month === y.month && x.day === y.day;
}

/** "14:20:34.123" today in the zone, "Nov 26 14:20:34.123" on another day (an event's time, in µs). */
export function formatListTime(
  timeUs: number,
  zone: TimeZoneMode,
  nowMs: number,
  offsetMinutes: (t: number) => number = localOffset,
): string {
  const ms = Math.floor(timeUs / 1000);
  const p = zonedParts(ms, zone, offsetMinutes);
  const clock = `${pad(p.hours)}:${pad(p.minutes)}:${pad(p.seconds)}.${pad(p.millis, 3)}`;
  if (isSameDay(ms, nowMs, zone, offsetMinutes)) return clock;
  const thisYear = zonedParts(nowMs, zone, offsetMinutes).year === p.year;
  return `${months[p.month - 1]} ${p.day}${thisYear ? "" : ` ${p.year}`} ${clock}`;
}

/** "2026-11-27 06:55:00.123 UTC": a moment in full, with its zone (an event's time, in µs). */
export function formatFullTime(timeUs: number, zone: TimeZoneMode, offsetMinutes: (t: number) => number = localOffset): string {
  const ms = Math.floor(timeUs / 1000);
  const p = zonedParts(ms, zone, offsetMinutes);
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)} ${pad(p.hours)}:${pad(p.minutes)}:${pad(p.seconds)}.${pad(p.millis, 3)} ${zoneName(zone, ms, offsetMinutes)}`;
}

/** Noon of the moment's day in the zone: one value for the whole day, so what depends on "today" changes once a day. */
export function noonOfDay(ms: number, zone: TimeZoneMode, offsetMinutes: (t: number) => number = localOffset): number {
  const p = zonedParts(ms, zone, offsetMinutes);
  const wall = Date.UTC(p.year, p.month - 1, p.day, 12);
  return zone === "UTC" ? wall : wall - offsetMinutes(wall) * 60_000;
}
