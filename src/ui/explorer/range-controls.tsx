import { useEffect, useState } from "react";
import { centredOn, endingAt, isAllowedRange, presets, shiftGlobal, type TimeRange, zoomToFocus } from "~/lib/time/range.ts";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { formatInZone, parseTypedUtc, typedTimePlaceholder } from "~/lib/time/typed-time.ts";

const btn =
  "rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1 text-xs text-zinc-200 hover:bg-zinc-800 disabled:cursor-not-allowed disabled:opacity-40";

export type RangeChange = { global: TimeRange; focus: TimeRange | null };

/** The explorer's range controls: shift, presets ending now, now, jump to a typed UTC time, zoom, clear, zone. */
export function RangeControls({
  global,
  focus,
  tz,
  onChange,
  onZone,
  now = Date.now,
}: {
  global: TimeRange;
  focus: TimeRange | null;
  tz: TimeZoneMode;
  onChange: (next: RangeChange) => void;
  onZone: (tz: TimeZoneMode) => void;
  now?: () => number;
}) {
  const [typed, setTyped] = useState("");
  const [placeholder, setPlaceholder] = useState("");
  useEffect(() => setPlaceholder(typedTimePlaceholder(now())), [now]);
  const typedTime = parseTypedUtc(typed);
  // Only ranges the server accepts (from 2000 to a day from now) can be chosen.
  const jumpTo = typedTime !== null && isAllowedRange(centredOn(global, typedTime), now()) ? typedTime : null;
  const back = shiftGlobal(global, -1);
  const forward = shiftGlobal(global, 1);
  const duration = global.endMs - global.startMs;

  return (
    <div className="flex flex-wrap items-center gap-2">
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
      <span className="min-w-0 font-mono text-xs text-zinc-300" data-testid="global-range">
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
      <span className="mx-1 h-5 w-px bg-zinc-800" />
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
        onSubmit={(e) => {
          e.preventDefault();
          if (jumpTo !== null) onChange({ global: centredOn(global, jumpTo), focus: null });
        }}
      >
        <input
          aria-label="Jump to time (UTC)"
          className="w-40 rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1 font-mono text-xs text-zinc-100 placeholder:text-zinc-600"
          placeholder={placeholder}
          value={typed}
          spellCheck={false}
          onChange={(e) => setTyped(e.target.value)}
        />
        <button type="submit" className={btn} disabled={jumpTo === null} title="Times are UTC, as YYYY-MM-DD HH:MM:SS">
          Go
        </button>
      </form>
      <span className="mx-1 h-5 w-px bg-zinc-800" />
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
      <fieldset aria-label="Time zone" className="ml-auto flex overflow-hidden rounded-md border border-zinc-700 text-xs">
        {(["UTC", "Local"] as const).map((z) => (
          <button
            key={z}
            type="button"
            aria-pressed={tz === z}
            onClick={() => onZone(z)}
            className={`px-2 py-1 ${tz === z ? "bg-zinc-700 text-zinc-50" : "bg-zinc-900 text-zinc-400 hover:bg-zinc-800"}`}
          >
            {z}
          </button>
        ))}
      </fieldset>
    </div>
  );
}
