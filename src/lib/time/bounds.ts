import { AppError } from "~/lib/errors.ts";

/**
 * The time ranges anything may ask about (API bodies, tunnel requests, the explorer's URL): whole milliseconds
 * from 2000-01-01 to a day past now, at most 400 days long. Checked where a range enters, so that no work
 * (bucketing, SQL literals, axis ticks) ever sees a range it cannot handle in a few steps.
 */
export const earliestMs = Date.UTC(2000, 0, 1);
const dayMs = 86_400_000;
/** How far past now a range may end: clocks differ, and a preset ends at the next whole second. */
export const futureSlackMs = dayMs;
export const maxSpanMs = 400 * dayMs;

export type MsRange = { lowerMs: number; upperMs: number };

/** Why a range is refused, in words for its sender, or null when it is fine. */
export function timeRangeProblem(range: unknown, nowMs: number): string | null {
  if (typeof range !== "object" || range === null) return "is required";
  const { lowerMs, upperMs } = range as Record<string, unknown>;
  if (!Number.isSafeInteger(lowerMs) || !Number.isSafeInteger(upperMs)) return "must be whole milliseconds";
  const lo = lowerMs as number;
  const hi = upperMs as number;
  if (hi <= lo) return "is empty (its end must come after its start)";
  if (lo < earliestMs) return "starts before 2000-01-01";
  if (hi > nowMs + futureSlackMs) return "ends more than a day from now";
  if (hi - lo > maxSpanMs) return "is longer than 400 days";
  return null;
}

/** The range, or a BAD_REQUEST naming `what` (e.g. "global time range") and the problem. */
export function checkTimeRange(range: unknown, what: string, nowMs: number = Date.now()): MsRange {
  const problem = timeRangeProblem(range, nowMs);
  if (problem) throw new AppError("BAD_REQUEST", `${what} ${problem}`);
  const { lowerMs, upperMs } = range as MsRange;
  return { lowerMs, upperMs };
}
