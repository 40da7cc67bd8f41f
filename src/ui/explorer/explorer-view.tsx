import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useSearchParams } from "react-router";
import { joinFilterChips } from "~/lib/filter/parse.ts";
import { formatDuration } from "~/lib/format.ts";
import { gridRange, type TimeRange } from "~/lib/time/range.ts";
import { ClauseEditor } from "./clause-editor.tsx";
import { ExplorerFilterBar } from "./explorer-filter-bar.tsx";
import { decodeState, defaultState, type ExplorerState, encodeState, toQueryFilter } from "./explorer-state.ts";
import { Histogram, type HistogramMode, latencyLines } from "./histogram.tsx";
import type { HistogramAnswer, QueryClient } from "./query-client.ts";
import { QueryError } from "./query-error.tsx";
import { RangeControls } from "./range-controls.tsx";
import { ResultsPanel } from "./results-panel.tsx";
import { useQuery } from "./use-query.ts";

/**
 * The requests explorer: histogram with brush, range controls, filters and the results. The one source of
 * truth is the `filter` URL parameter, so a URL reopens the same view and back/forward walk the changes.
 */
export function ExplorerView({ client, namespaceId, now = Date.now }: { client: QueryClient; namespaceId: string; now?: () => number }) {
  const [params, setParams] = useSearchParams();
  const raw = params.get("filter");
  const state = useMemo(() => decodeState(raw, now()), [raw, now]);

  const setState = useCallback(
    (next: ExplorerState, replace = false) => {
      setParams(
        (p) => {
          const q = new URLSearchParams(p);
          q.set("filter", encodeState(next));
          return q;
        },
        { replace, preventScrollReset: true },
      );
    },
    [setParams],
  );

  // Times show in the browser's zone (Local) and "now" is the browser's: render after hydration only.
  const [isMounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);

  // No (or an unreadable) state: the last hour, written into the URL without a history entry.
  useEffect(() => {
    if (!state) setState(defaultState(now()), true);
  }, [state, setState, now]);

  if (!state || !isMounted) return <p className="p-6 text-sm text-zinc-500">Loading…</p>;
  return <ExplorerBody state={state} setState={setState} client={client} namespaceId={namespaceId} now={now} />;
}

function ExplorerBody({
  state,
  setState,
  client,
  namespaceId,
  now,
}: {
  state: ExplorerState;
  setState: (s: ExplorerState, replace?: boolean) => void;
  client: QueryClient;
  namespaceId: string;
  now: () => number;
}) {
  const filterText = joinFilterChips(state.text);
  // Counts or latency lines: a URL parameter of its own, so a shared URL shows the same chart.
  const [params, setParams] = useSearchParams();
  const mode: HistogramMode = params.get("chart") === "latency" ? "latency" : "counts";
  const setMode = (next: HistogramMode) =>
    setParams(
      (p) => {
        const q = new URLSearchParams(p);
        if (next === "latency") q.set("chart", "latency");
        else q.delete("chart");
        return q;
      },
      { replace: true, preventScrollReset: true },
    );
  const histFilter = useMemo(() => toQueryFilter(state, false), [state]);
  const rowsFilter = useMemo(() => toQueryFilter(state, true), [state]);

  // The histogram depends on the global range and the filters only: brushing does not re-query it.
  const histKey = JSON.stringify([histFilter.global, histFilter.clauses, filterText, mode]);
  const cache = useRef(new Map<string, HistogramAnswer>());
  const hist = useQuery<HistogramAnswer>(histKey, async (signal) => {
    const hit = cache.current.get(histKey);
    if (hit) return hit;
    const answer = await client.histogram(histFilter, filterText, signal, mode === "latency");
    if (cache.current.size > 20) cache.current.clear();
    cache.current.set(histKey, answer);
    return answer;
  });
  const [lastBrush, setLastBrush] = useState(0);

  const grid = gridRange(state.global);
  const showBuckets = hist.data && hist.data.startMs === grid.originMs && hist.data.bucketMs === grid.bucketMs ? hist.data.buckets : null;
  const onFocus = (focus: TimeRange) => {
    setLastBrush(performance.now());
    setState({ ...state, focus });
  };

  return (
    <div className="flex min-h-0 flex-1 flex-col gap-3" data-last-brush={lastBrush || undefined}>
      <ExplorerFilterBar
        key={JSON.stringify(state.text)}
        chips={state.text}
        namespaceId={namespaceId}
        onChips={(text) => setState({ ...state, text })}
      />
      <ClauseEditor
        clauses={state.clauses}
        global={state.global}
        onClauses={(clauses) => setState({ ...state, clauses })}
        onGlobal={(global) => setState({ ...state, global, focus: null })}
      />
      <RangeControls
        global={state.global}
        focus={state.focus}
        tz={state.tz}
        now={now}
        onChange={({ global, focus }) => setState({ ...state, global, focus })}
        onZone={(tz) => setState({ ...state, tz })}
      />
      <div className="rounded-lg border border-zinc-800 bg-zinc-950 p-2">
        <div className="mb-1 flex flex-wrap items-center gap-x-3 gap-y-1 text-xs text-zinc-400">
          <span data-testid="histogram-total">
            {hist.data ? `${hist.data.total.toLocaleString("en-US")} request${hist.data.total === 1 ? "" : "s"}` : "…"}
          </span>
          <span>bucket {formatBucket(grid.bucketMs)}</span>
          <fieldset className="inline-flex overflow-hidden rounded-md border border-zinc-700" aria-label="Chart">
            {(["counts", "latency"] as const).map((m) => (
              <button
                key={m}
                type="button"
                aria-pressed={mode === m}
                onClick={() => setMode(m)}
                className={`px-2 py-0.5 ${mode === m ? "bg-zinc-700 text-zinc-100" : "text-zinc-400 hover:bg-zinc-800"}`}
              >
                {m === "counts" ? "Counts" : "Percentiles"}
              </button>
            ))}
          </fieldset>
          {mode === "counts" ? (
            <>
              <span className="flex items-center gap-1">
                <i className="inline-block size-2 bg-emerald-500/70" /> 1xx–3xx
              </span>
              <span className="flex items-center gap-1">
                <i className="inline-block size-2 bg-amber-400" /> 4xx
              </span>
              <span className="flex items-center gap-1">
                <i className="inline-block size-2 bg-red-500" /> 5xx
              </span>
            </>
          ) : (
            <>
              {latencyLines.map((l) => (
                <span key={l.key} className="flex items-center gap-1">
                  <i className={`inline-block h-0.5 w-3 ${l.swatch}`} /> {l.key}
                </span>
              ))}
              <span data-testid="latency-max">top {formatDuration(Math.max(0, ...(showBuckets ?? []).map((b) => b.p99 ?? 0)))}</span>
            </>
          )}
          {state.focus ? (
            <span className="ml-auto max-sm:ml-0 max-sm:basis-full" data-testid="focus-range">
              focus {new Date(state.focus.startMs).toISOString()} → {new Date(state.focus.endMs).toISOString()}
            </span>
          ) : (
            <span className="ml-auto text-zinc-500 max-sm:hidden">Drag on the chart to focus a range</span>
          )}
        </div>
        {hist.status === "failed" ? <QueryError what="The histogram" message={hist.message} onRetry={hist.retry} /> : null}
        <Histogram global={state.global} focus={state.focus} buckets={showBuckets} tz={state.tz} onFocus={onFocus} mode={mode} />
      </div>
      <ResultsPanel client={client} filter={rowsFilter} filterText={filterText} tz={state.tz} />
      <a
        className="self-end text-xs text-zinc-500 underline-offset-2 hover:text-zinc-300 hover:underline"
        href={`/minified/?${new URLSearchParams({ namespace: namespaceId, filter: encodeState(state) })}`}
        target="_blank"
        rel="noreferrer"
      >
        Open these results on their own page
      </a>
    </div>
  );
}

function formatBucket(ms: number): string {
  if (ms < 60_000) return `${ms / 1000}s`;
  if (ms < 3_600_000) return `${ms / 60_000}m`;
  if (ms < 86_400_000) return `${ms / 3_600_000}h`;
  return `${ms / 86_400_000}d`;
}
