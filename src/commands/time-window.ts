import { parseFilter } from "~/lib/filter/parse.ts";

/** The flags that name the window and the filter, alike in every command that queries the store. */
export const windowFlags = {
  since: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  filter: { type: "string" },
} as const;

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseSince(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * units[m[2]!]!;
  return ms > 0 && Number.isFinite(ms) ? ms : null;
}

/**
 * The window `--since`, `--from` and `--to` name (an hour back from now unless told), or what is wrong with them, as
 * `tapscope query` and `tapscope endpoints` say it.
 */
export function timeWindow(
  flags: { since?: string; from?: string; to?: string },
  nowMs: number,
): { lowerMs: number; upperMs: number } | { error: string } {
  const sinceMs = flags.since === undefined ? null : parseSince(flags.since);
  if (flags.since !== undefined && sinceMs === null) return { error: `--since must look like 30s, 15m, 1h or 2d, got "${flags.since}"` };
  const from = flags.from === undefined ? null : Date.parse(flags.from);
  if (from !== null && !Number.isFinite(from))
    return { error: `--from must be an ISO time such as 2026-11-21T09:00:00Z, got "${flags.from}"` };
  const to = flags.to === undefined ? null : Date.parse(flags.to);
  if (to !== null && !Number.isFinite(to)) return { error: `--to must be an ISO time such as 2026-11-21T09:00:00Z, got "${flags.to}"` };
  if (sinceMs !== null && from !== null) return { error: "use --since or --from, not both" };
  const upperMs = to ?? nowMs;
  const lowerMs = from ?? upperMs - (sinceMs ?? 3_600_000);
  if (lowerMs >= upperMs) return { error: "the time range is empty (--from must be before --to)" };
  return { lowerMs, upperMs };
}

/** A filter the server would refuse, said with a caret under the mistake; null when it parses (or is empty). */
export function filterProblem(text: string): string | null {
  if (!text.trim()) return null;
  const parsed = parseFilter(text);
  if (parsed.ok) return null;
  const { message, position } = parsed.error;
  return `bad filter: ${message}\n  ${text}\n  ${" ".repeat(Math.max(0, position))}^`;
}
