import { dbOutcome, dbOutcomeClass, dbSystemName, dbSystemShort, isDbCall } from "~/lib/db-call.ts";
import { displayUrl, eventUrl } from "~/lib/event-url.ts";
import { formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { statusClass } from "../live/format.ts";
import { type CallStep, callSteps } from "./call-steps.ts";
import { MiddleCutText } from "./middle-cut-text.tsx";

/**
 * The calls an inbound request made, HTTP and database together, as bars on the request's time axis in the order they
 * were made, then the program's own time; the slowest step overall is flagged as the culprit. A call opens on click.
 */
export function CallWaterfall({
  request,
  calls,
  onOpen,
  isCulpritHere = true,
}: {
  request: TracedEvent;
  calls: readonly TracedEvent[];
  onOpen?: (event: TracedEvent) => void;
  /** false when the request's own timing has a slower step than its processing (receiving or sending): flagged there. */
  isCulpritHere?: boolean;
}) {
  const broken = callSteps(request, calls);
  const unflag = (step: CallStep): CallStep => (isCulpritHere ? step : { ...step, isCulprit: false });
  const steps = broken.calls.map(unflag);
  const own = unflag(broken.own);
  const total = broken.total;
  return (
    <ol aria-label="Outbound calls" className="space-y-0.5">
      {steps.map((step) => (
        <li key={step.event!.event_id} data-culprit={step.isCulprit || undefined}>
          <button
            type="button"
            onClick={() => onOpen?.(step.event!)}
            className="grid w-full grid-cols-[3.5rem_3.25rem_minmax(0,1fr)_4.5rem] items-center gap-2 rounded px-1 py-0.5 text-left font-mono text-xs hover:bg-zinc-800"
          >
            <CallKind event={step.event!} />
            <CallStatus event={step.event!} />
            <span className="min-w-0">
              <span className={`flex min-w-0 items-baseline ${step.isCulprit ? "font-semibold text-red-300" : "text-zinc-300"}`}>
                {step.isCulprit ? <CulpritBadge /> : null}
                <MiddleCutText text={callText(step.event!)} className="" />
              </span>
              <Bar step={step} total={total} colour={isDbCall(step.event!) ? "bg-violet-500" : "bg-sky-500"} />
            </span>
            <span className="text-right text-zinc-400 tabular-nums">{formatDuration(step.event!.http_duration)}</span>
          </button>
        </li>
      ))}
      <li
        data-culprit={own.isCulprit || undefined}
        data-testid="own-time"
        className="grid grid-cols-[3.5rem_3.25rem_minmax(0,1fr)_4.5rem] items-center gap-2 px-1 py-0.5 font-mono text-xs"
      >
        <span className="col-span-2 text-zinc-500">own time</span>
        <span className="min-w-0">
          <span className={`block truncate ${own.isCulprit ? "font-semibold text-red-300" : "text-zinc-400"}`}>
            {own.isCulprit ? <CulpritBadge /> : null}
            the program's own work, not in any call
          </span>
          <span className="relative mt-0.5 block h-1 rounded bg-zinc-800">
            <span className="absolute inset-y-0 left-0 rounded bg-zinc-500" style={{ width: `${(own.duration / total) * 100}%` }} />
          </span>
        </span>
        <span className="text-right text-zinc-400 tabular-nums">{formatDuration(own.duration)}</span>
      </li>
    </ol>
  );
}

function CulpritBadge() {
  return <span className="mr-1 shrink-0 rounded bg-red-500/20 px-1 text-[10px] tracking-wide text-red-300 uppercase">culprit</span>;
}

function Bar({ step, total, colour }: { step: CallStep; total: number; colour: string }) {
  const left = Math.min(98, (step.start / total) * 100);
  const width = Math.min(100 - left, (step.duration / total) * 100);
  return (
    <span className="relative mt-0.5 block h-1 rounded bg-zinc-800">
      <span
        className={`absolute inset-y-0 rounded ${colour} ${step.isCulprit ? "ring-1 ring-red-400" : ""}`}
        style={{ left: `${left}%`, width: `max(2px, ${width}%)` }}
      />
    </span>
  );
}

function CallKind({ event }: { event: TracedEvent }) {
  if (isDbCall(event))
    return (
      <span className="truncate font-semibold text-violet-300" title={dbSystemName(event.db_system)}>
        {dbSystemShort(event.db_system)}
      </span>
    );
  return <span className="truncate font-semibold">{event.http_req_method || event.protocol.toUpperCase()}</span>;
}

function CallStatus({ event }: { event: TracedEvent }) {
  if (isDbCall(event)) return <span className={`truncate ${dbOutcomeClass(event)}`}>{dbOutcome(event)}</span>;
  return <span className={statusClass(event.http_resp_status_code)}>{event.http_resp_status_code || "—"}</span>;
}

/** The statement of a database call, the URL of an HTTP call. */
function callText(event: TracedEvent): string {
  if (isDbCall(event) || event.protocol === "tcp") return displayUrl(event);
  return eventUrl(event);
}
