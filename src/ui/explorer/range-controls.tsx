import { useEffect, useState } from "react";
import { centredOn, endingAt, isAllowedRange, presets, shiftGlobal, type TimeRange, zoomToFocus } from "~/lib/time/range.ts";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { formatInZone, jumpTimeHint, parseJumpTime } from "~/lib/time/typed-time.ts";
import { zoneName } from "~/lib/time/zone.ts";
import { ZoneToggle } from "~/ui/components/zone-toggle.tsx";

const btn =
  "rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1 text-xs text-zinc-200 hover:bg-zinc-800 disabled:cursor-not-allowed disabled:opacity-40";

export type RangeChange = { global: TimeRange; focus: TimeRange | null };

/** What the jump box says about the text when Go is pressed: the range it moves to, or why it cannot. */
export function jumpTarget(
  text: string,
  global: TimeRange,
  tz: TimeZoneMode,
  nowMs: number,
): { ok: true; range: TimeRange } | { ok: false; reason: string } {
  const typed = parseJumpTime(text, tz, nowMs);
  if (!typed.ok) return typed;
  const range = centredOn(global, typed.ms);
  // Only ranges the server accepts (from 2000 to a day from now) can be chosen.
  if (!isAllowedRange(range, nowMs))
    return { ok: false, reason: `${formatInZone(typed.ms, tz)} is outside what can be searched (from 2000 to a day from now).` };
  return { ok: true, range };
}

/**
 * The explorer's range controls: shift (beside the range), presets ending now, now, jump to a typed time, zoom,
 * clear, and the display zone. `foldedClass` goes on all but the range and its shift buttons (a phone folds them).
 */
export function RangeControls({
  global,
  focus,
  tz,
  onChange,
  now = Date.now,
  foldedClass = "",
}: {
  global: TimeRange;
  focus: TimeRange | null;
  tz: TimeZoneMode;
  onChange: (next: RangeChange) => void;
  now?: () => number;
  foldedClass?: string;
}) {
  const [typed, setTyped] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [placeholder, setPlaceholder] = useState("");
  useEffect(() => setPlaceholder(`e.g. ${new Date(now() - 7 * 86_400_000).toISOString().slice(0, 11)}12:34:56 or 12:34`), [now]);
  const back = shiftGlobal(global, -1);
  const forward = shiftGlobal(global, 1);
  const duration = global.endMs - global.startMs;

  return (
    <div className="flex flex-wrap items-center gap-2">
      <div className="flex max-w-full min-w-0 items-center gap-2 max-sm:w-full max-sm:justify-between">
        <button
          type="button"
          className={btn}
          aria-label="Shift back"
          title="Shift back by 30 buckets"
          disabled={!isAllowedRange(back, now())}
          onClick={() => onChange({ global: back, focus: null })}
        >
          ◀
        </button>
        <span className="min-w-0 font-mono text-xs text-zinc-300 max-sm:text-center" data-testid="global-range">
          {formatInZone(global.startMs, tz)} → {formatInZone(global.endMs, tz)}
        </span>
        <button
          type="button"
          className={btn}
          aria-label="Shift forward"
          title="Shift forward by 30 buckets"
          disabled={!isAllowedRange(forward, now())}
          onClick={() => onChange({ global: forward, focus: null })}
        >
          ▶
        </button>
      </div>
      <div className={`contents ${foldedClass}`}>
        <span className="mx-1 h-5 w-px bg-zinc-800 max-sm:hidden" />
        {presets.map((p) => (
          <button
            key={p.label}
            type="button"
            className={btn}
            title={`Last ${p.label}`}
            onClick={() => onChange({ global: endingAt(p.ms, now()), focus: null })}
          >
            {p.label}
          </button>
        ))}
        <button type="button" className={btn} onClick={() => onChange({ global: endingAt(duration, now()), focus: null })}>
          Now
        </button>
        <form
          className="flex items-center gap-1"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            const target = jumpTarget(typed, global, tz, now());
            if (!target.ok) {
              setProblem(target.reason);
              return;
            }
            setProblem(null);
            onChange({ global: target.range, focus: null });
          }}
        >
          <input
            aria-label={`Jump to time (${zoneName(tz)})`}
            aria-invalid={problem !== null}
            aria-describedby={problem ? "jump-problem" : undefined}
            className={`w-52 rounded-md border bg-zinc-900 px-2 py-1 font-mono text-xs text-zinc-100 placeholder:text-zinc-600 ${problem ? "border-red-500/70" : "border-zinc-700"}`}
            placeholder={placeholder}
            value={typed}
            spellCheck={false}
            onChange={(e) => {
              setTyped(e.target.value);
              setProblem(null);
            }}
          />
          <button
            type="submit"
            className={btn}
            disabled={typed.trim() === ""}
            title={`${jumpTimeHint}; without a zone it is read in ${zoneName(tz)}`}
          >
            Go
          </button>
        </form>
        <span className="mx-1 h-5 w-px bg-zinc-800 max-sm:hidden" />
        <button
          type="button"
          className={btn}
          disabled={!focus}
          onClick={() => focus && onChange({ global: zoomToFocus(focus), focus: null })}
        >
          Zoom to focus
        </button>
        <button type="button" className={btn} disabled={!focus} onClick={() => onChange({ global, focus: null })}>
          Clear focus
        </button>
        <ZoneToggle className="ml-auto" />
        {problem ? (
          <p id="jump-problem" role="alert" className="basis-full text-xs text-red-400">
            {problem}
          </p>
        ) : null}
      </div>
    </div>
  );
}
