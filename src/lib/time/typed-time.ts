/**
 * The jump-to-time box: "YYYY-MM-DD HH:MM:SS" in UTC. Text is accepted only when it
 * round-trips exactly (format(parse(text)) === text), so "2026-02-30 10:00:00" or a missing zero is refused.
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
