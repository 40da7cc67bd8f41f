import { type PointerEvent, useMemo, useRef, useState } from "react";
import type { HistogramBucket } from "~/lib/protocol/query.ts";
import { gridRange, type TimeRange } from "~/lib/time/range.ts";
import { chooseTickStep, type TimeZoneMode, tickLabel, ticks } from "~/lib/time/ticks.ts";
import { type DragMode, dragResult, type Geometry, modeAt, panHandleShare, xAt } from "./brush.ts";

const geo: Geometry = { width: 1200, height: 160 };

type Drag = { mode: DragMode; x0: number; x1: number; pointerId: number };

/** What the bars show: request counts (stacked by status), or the p50/p95/p99 of each bucket's durations as lines. */
export type HistogramMode = "counts" | "latency";

export const latencyLines = [
  { key: "p50", className: "stroke-emerald-400", swatch: "bg-emerald-400" },
  { key: "p95", className: "stroke-amber-400", swatch: "bg-amber-400" },
  { key: "p99", className: "stroke-red-400", swatch: "bg-red-400" },
] as const;

/**
 * Each percentile as a step line: flat across each bucket that has requests, joined to the next bucket when adjacent,
 * a gap where a bucket has none (so a lone bucket still shows).
 */
function latencyPaths(buckets: HistogramBucket[], span: (b: HistogramBucket) => [number, number], y: (us: number) => number) {
  return latencyLines.map(({ key, className }) => {
    let d = "";
    let lastEnd: number | null = null;
    for (const b of buckets) {
      const v = b[key];
      if (v === null || v === undefined) {
        lastEnd = null;
        continue;
      }
      const [x0, x1] = span(b);
      const isJoined = lastEnd !== null && Math.abs(lastEnd - x0) < 1;
      d += `${isJoined ? "L" : "M"}${x0.toFixed(1)} ${y(v).toFixed(1)} H${Math.max(x1, x0 + 2).toFixed(1)} `;
      lastEnd = x1;
    }
    return { key, className, d: d.trim() };
  });
}

/**
 * The request-count histogram (about 120 bars: successes, 4xx and 5xx stacked) with its brush.
 * Drawn as one SVG in a fixed 1200-wide view box (stretched to the width) spanning exactly the global range,
 * the labels as HTML under it.
 */
export function Histogram({
  global,
  focus,
  buckets,
  tz,
  onFocus,
  mode = "counts",
}: {
  global: TimeRange;
  focus: TimeRange | null;
  buckets: HistogramBucket[] | null;
  tz: TimeZoneMode;
  onFocus: (focus: TimeRange) => void;
  mode?: HistogramMode;
}) {
  const svg = useRef<SVGSVGElement>(null);
  const [drag, setDrag] = useState<Drag | null>(null);
  const grid = gridRange(global);
  const max = useMemo(() => Math.max(1, ...(buckets ?? []).map((b) => b.count)), [buckets]);
  const maxLatency = useMemo(() => Math.max(1, ...(buckets ?? []).map((b) => b.p99 ?? 0)), [buckets]);
  const shown = drag ? dragResult(drag.mode, global, focus, geo, drag.x0, drag.x1) : focus;

  const toView = (e: PointerEvent) => {
    const rect = svg.current?.getBoundingClientRect();
    if (!rect || rect.width === 0) return { x: e.clientX, y: e.clientY };
    return {
      x: ((e.clientX - rect.left) * geo.width) / rect.width,
      y: ((e.clientY - rect.top) * geo.height) / rect.height,
    };
  };

  const step = chooseTickStep(grid.endMs - grid.startMs);
  const tickTimes = ticks(grid.startMs, grid.endMs, tz);

  return (
    <div className="select-none">
      <svg
        ref={svg}
        role="img"
        aria-label={mode === "latency" ? "Latency percentiles over time" : "Requests over time"}
        data-testid="histogram"
        data-view={mode}
        data-max-latency={mode === "latency" ? maxLatency : undefined}
        data-mode={drag?.mode ?? ""}
        data-start={grid.startMs}
        data-end={grid.endMs}
        data-bucket-ms={grid.bucketMs}
        viewBox={`0 0 ${geo.width} ${geo.height}`}
        preserveAspectRatio="none"
        className="block h-40 w-full cursor-crosshair touch-none rounded-md bg-zinc-900"
        onPointerDown={(e) => {
          if (e.button !== 0) return;
          const p = toView(e);
          (e.currentTarget as Element).setPointerCapture?.(e.pointerId);
          setDrag({
            mode: modeAt(global, focus, geo, p.x, p.y),
            x0: p.x,
            x1: p.x,
            pointerId: e.pointerId,
          });
        }}
        onPointerMove={(e) => {
          if (!drag || e.pointerId !== drag.pointerId) return;
          const p = toView(e);
          setDrag({ ...drag, x1: p.x });
        }}
        onPointerUp={(e) => {
          if (!drag || e.pointerId !== drag.pointerId) return;
          const p = toView(e);
          const next = dragResult(drag.mode, global, focus, geo, drag.x0, p.x);
          setDrag(null);
          if (!focus || next.startMs !== focus.startMs || next.endMs !== focus.endMs) onFocus(next);
        }}
        onPointerCancel={() => setDrag(null)}
      >
        {mode === "latency"
          ? latencyPaths(
              (buckets ?? []).filter((b) => b.count > 0),
              (b) => [xAt(global, geo, Math.max(grid.startMs, b.timeMs)), xAt(global, geo, Math.min(grid.endMs, b.timeMs + grid.bucketMs))],
              (us) => geo.height - 2 - (us / maxLatency) * (geo.height - 8),
            ).map((line) => (
              <path
                key={line.key}
                data-line={line.key}
                d={line.d}
                fill="none"
                className={line.className}
                strokeWidth={1.5}
                vectorEffect="non-scaling-stroke"
              />
            ))
          : null}
        {(mode === "latency" ? [] : (buckets ?? [])).map((b) => {
          const h = (b.count / max) * (geo.height - 4);
          const e5 = (b.serverErrors / max) * (geo.height - 4);
          const e4 = (b.clientErrors / max) * (geo.height - 4);
          // Placed by time: the first and last buckets may be cut by the range.
          const x = xAt(global, geo, Math.max(grid.startMs, b.timeMs)) + 0.5;
          const w = Math.max(1, xAt(global, geo, Math.min(grid.endMs, b.timeMs + grid.bucketMs)) - x - 0.5);
          return b.count === 0 ? null : (
            <g key={b.timeMs}>
              <rect x={x} y={geo.height - h} width={w} height={h - e5 - e4} className="fill-emerald-500/70" />
              {e4 > 0 ? <rect x={x} y={geo.height - e5 - e4} width={w} height={e4} className="fill-amber-400" /> : null}
              {e5 > 0 ? <rect x={x} y={geo.height - e5} width={w} height={e5} className="fill-red-500" /> : null}
            </g>
          );
        })}
        {tickTimes.map((t) => (
          <line
            key={t}
            x1={xAt(global, geo, t)}
            x2={xAt(global, geo, t)}
            y1={0}
            y2={geo.height}
            className="stroke-zinc-800"
            vectorEffect="non-scaling-stroke"
          />
        ))}
        {shown ? (
          <g data-testid="brush" data-start={shown.startMs} data-end={shown.endMs}>
            <rect x={0} y={0} width={Math.max(0, xAt(global, geo, shown.startMs))} height={geo.height} className="fill-zinc-950/60" />
            <rect
              x={xAt(global, geo, shown.endMs)}
              y={0}
              width={Math.max(0, geo.width - xAt(global, geo, shown.endMs))}
              height={geo.height}
              className="fill-zinc-950/60"
            />
            <rect
              data-testid="pan-handle"
              x={xAt(global, geo, shown.startMs)}
              y={geo.height * (1 - panHandleShare)}
              width={xAt(global, geo, shown.endMs) - xAt(global, geo, shown.startMs)}
              height={geo.height * panHandleShare}
              className="cursor-grab fill-sky-400/20"
            />
            <line
              data-testid="left-handle"
              x1={xAt(global, geo, shown.startMs)}
              x2={xAt(global, geo, shown.startMs)}
              y1={0}
              y2={geo.height}
              className="cursor-ew-resize stroke-sky-400"
              strokeWidth={3}
              vectorEffect="non-scaling-stroke"
            />
            <line
              data-testid="right-handle"
              x1={xAt(global, geo, shown.endMs)}
              x2={xAt(global, geo, shown.endMs)}
              y1={0}
              y2={geo.height}
              className="cursor-ew-resize stroke-sky-400"
              strokeWidth={3}
              vectorEffect="non-scaling-stroke"
            />
          </g>
        ) : null}
      </svg>
      <div className="relative mt-1 h-4 text-[10px] text-zinc-500" data-testid="axis">
        {tickTimes.map((t) => (
          <span
            key={t}
            className="absolute -translate-x-1/2 whitespace-nowrap max-sm:even:hidden"
            style={{ left: `${(xAt(global, geo, t) / geo.width) * 100}%` }}
          >
            {tickLabel(t, step, tz)}
          </span>
        ))}
      </div>
    </div>
  );
}
