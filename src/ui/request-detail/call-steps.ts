import type { TracedEvent } from "~/lib/protocol/event.ts";

export type CallStep = {
  /** The call; none for the program's own time. */
  event: TracedEvent | null;
  /** Microseconds from the start of the request, inside it. */
  start: number;
  duration: number;
  isCulprit: boolean;
};

/** The calls an inbound request made, and what they leave over. */
export type CallSteps = {
  calls: CallStep[];
  /** The request's time not covered by any call: the program's own work (and waiting on what was not traced). */
  own: CallStep;
  /** The request's span the bars are drawn on. */
  total: number;
};

/**
 * An inbound request's calls (HTTP and database together) as steps in time order, with the program's own time, and the
 * slowest step overall (a call, or the own time when that is longer than any call) flagged as the culprit. Calls in
 * parallel cover the same time once.
 */
export function callSteps(request: TracedEvent, children: readonly TracedEvent[]): CallSteps {
  const sorted = [...children].sort((a, b) => a.time - b.time);
  const total = Math.max(request.http_duration, 1);
  const calls: CallStep[] = sorted.map((event) => {
    // Two processes' clocks can disagree a little: keep each call inside the request's span.
    const start = Math.min(total, Math.max(0, event.time - request.time));
    return { event, start, duration: Math.max(0, Math.min(event.http_duration, total - start)), isCulprit: false };
  });
  let covered = 0;
  let reach = 0;
  for (const step of calls) {
    const end = step.start + step.duration;
    if (end <= reach) continue;
    covered += end - Math.max(step.start, reach);
    reach = end;
  }
  const own: CallStep = { event: null, start: 0, duration: Math.max(0, request.http_duration - covered), isCulprit: false };
  let culprit: CallStep | undefined;
  for (const step of [...calls, own]) if (step.duration > 0 && (!culprit || step.duration > culprit.duration)) culprit = step;
  if (culprit && calls.length > 0) culprit.isCulprit = true;
  return { calls, own, total };
}
