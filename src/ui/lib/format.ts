/** Token ages and badges: units seconds to days with plurals; NEW under 30 s. */
const units = [
  { name: "day", ms: 86_400_000 },
  { name: "hour", ms: 3_600_000 },
  { name: "minute", ms: 60_000 },
  { name: "second", ms: 1000 },
] as const;

export const NEW_TOKEN_MS = 30_000;

export function toMillis(time: string | number | Date): number {
  if (time instanceof Date) return time.getTime();
  if (typeof time === "number") return time;
  return new Date(time).getTime();
}

export function formatAge(time: string | number | Date, now: number = Date.now()): string {
  const elapsed = Math.max(0, now - toMillis(time));
  for (const unit of units) {
    const count = Math.floor(elapsed / unit.ms);
    if (count >= 1) return `${count} ${unit.name}${count === 1 ? "" : "s"} ago`;
  }
  return "0 seconds ago";
}

export function isNewToken(time: string | number | Date, now: number = Date.now()): boolean {
  return now - toMillis(time) < NEW_TOKEN_MS;
}

export function formatDate(time: string | number | Date): string {
  const date = new Date(toMillis(time));
  if (Number.isNaN(date.getTime())) return "";
  return date.toLocaleDateString("en-US", { year: "numeric", month: "short", day: "numeric", timeZone: "UTC" });
}

/**
 * Tokens are listed by their last part only (the rest is never stored): a fixed prefix, '...', the last part.
 * The server may already send the display form ("tsk_...a1b2c3"); a bare last part gets the prefix.
 */
export const TOKEN_DISPLAY_PREFIX = "tsk_";

export function maskToken(name: string): string {
  return name.includes("...") ? name : `${TOKEN_DISPLAY_PREFIX}...${name}`;
}
