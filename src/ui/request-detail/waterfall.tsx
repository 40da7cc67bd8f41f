import { formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { timingSteps } from "./timing.ts";

const colours: Record<string, string> = {
  connect: "bg-violet-500",
  "TLS handshake": "bg-fuchsia-500",
  send: "bg-sky-500",
  wait: "bg-amber-500",
  receive: "bg-emerald-500",
  "request receive": "bg-sky-500",
  processing: "bg-amber-500",
  "response send": "bg-emerald-500",
};

/**
 * The latency breakdown as bars on one time axis; the slowest step is marked as the culprit, unless it is the
 * processing that the calls' waterfall breaks down (`isProcessingBrokenDown`): then the culprit is flagged there.
 */
export function Waterfall({ event, isProcessingBrokenDown = false }: { event: TracedEvent; isProcessingBrokenDown?: boolean }) {
  const steps = timingSteps(event).map((s) =>
    isProcessingBrokenDown && s.isCulprit && s.label === "processing" ? { ...s, isCulprit: false } : s,
  );
  if (steps.length === 0) return <p className="text-xs text-zinc-500">No timing breakdown for this exchange.</p>;
  const total = Math.max(event.http_duration, ...steps.map((s) => s.start + s.duration), 1);
  return (
    <ol className="space-y-1" aria-label="Timing">
      {steps.map((step) => (
        <li
          key={step.label}
          data-culprit={step.isCulprit || undefined}
          className="grid grid-cols-[8rem_1fr_5rem] items-center gap-2 text-xs"
        >
          <span className={step.isCulprit ? "font-semibold text-red-300" : "text-zinc-300"}>
            {step.label}
            {step.isCulprit ? (
              <span className="ml-1 rounded bg-red-500/20 px-1 text-[10px] tracking-wide text-red-300 uppercase">culprit</span>
            ) : null}
          </span>
          <span className="relative h-3 rounded bg-zinc-800">
            <span
              className={`absolute inset-y-0 rounded ${colours[step.label] ?? "bg-zinc-400"} ${step.isCulprit ? "ring-2 ring-red-400" : ""}`}
              style={{ left: `${(step.start / total) * 100}%`, width: `max(2px, ${(step.duration / total) * 100}%)` }}
            />
          </span>
          <span className="text-right tabular-nums text-zinc-300">{formatDuration(step.duration)}</span>
        </li>
      ))}
    </ol>
  );
}
