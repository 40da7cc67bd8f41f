import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useSearchParams } from "react-router";
import type { KnownValues } from "~/lib/filter/complete.ts";
import { joinFilterChips } from "~/lib/filter/parse.ts";
import { highlightTerms } from "~/lib/filter/search.ts";
import { formatDuration } from "~/lib/format.ts";
import type { Clause } from "~/lib/protocol/query.ts";
import { gridRange, type TimeRange } from "~/lib/time/range.ts";
import { formatInZone } from "~/lib/time/typed-time.ts";
import { SearchBox } from "~/ui/filters/search-box.tsx";
import { useTimeZone } from "~/ui/lib/time-zone.ts";
import { ExplorerFilterBar } from "./explorer-filter-bar.tsx";
import { decodeState, defaultState, type ExplorerState, encodeState, toQueryFilter } from "./explorer-state.ts";
import { Histogram, type HistogramMode, latencyLines } from "./histogram.tsx";
import type { HistogramAnswer, QueryClient, RowsAnswer } from "./query-client.ts";
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
          // Another range or filter is another list: it starts at its first page.
          q.delete("page");
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
  const [tz] = useTimeZone();
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
  const [known, setKnown] = useState<KnownValues>({});
  const onRows = useCallback((answer: RowsAnswer) => setKnown(knownValues(answer)), []);
  const highlight = useMemo(() => highlightTerms(state.text), [state.text]);

  // On a phone the filters, the range's other controls and the chart fold away so that the list takes the screen.
  const [areControlsOpen, setControlsOpen] = useState(false);
  const folded = areControlsOpen ? "" : "max-sm:hidden";
  const numFilters = state.text.length + state.clauses.length;

  const grid = gridRange(state.global);
  const showBuckets = hist.data && hist.data.startMs === grid.originMs && hist.data.bucketMs === grid.bucketMs ? hist.data.buckets : null;
  const onFocus = (focus: TimeRange) => {
    setLastBrush(performance.now());
    setState({ ...state, focus });
  };

  return (
    <div className="flex min-h-0 flex-1 flex-col gap-3 max-sm:min-h-auto" data-last-brush={lastBrush || undefined}>
      <button
        type="button"
        aria-expanded={areControlsOpen}
        aria-controls="explorer-controls"
        onClick={() => setControlsOpen((isOpen) => !isOpen)}
        className="flex items-center gap-2 rounded-md border border-zinc-800 bg-zinc-900 px-3 py-1.5 text-left text-xs text-zinc-200 sm:hidden"
      >
        <span aria-hidden="true">{areControlsOpen ? "▾" : "▸"}</span>
        <span className="flex-1">{areControlsOpen ? "Hide filters and chart" : "Filters and chart"}</span>
        {numFilters > 0 ? (
          <span className="rounded bg-sky-500/15 px-1.5 text-sky-300">
            {numFilters} {numFilters === 1 ? "filter" : "filters"}
          </span>
        ) : null}
      </button>
      <div id="explorer-controls" className={`flex flex-col gap-3 ${folded}`}>
        <SearchBox chips={state.text} onChips={(text) => setState({ ...state, text })} />
        <ExplorerFilterBar
          key={JSON.stringify(state.text)}
          chips={state.text}
          namespaceId={namespaceId}
          known={known}
          onChips={(text) => setState({ ...state, text })}
        />
        {state.clauses.length > 0 ? <OldClauses clauses={state.clauses} onClauses={(clauses) => setState({ ...state, clauses })} /> : null}
      </div>
      <RangeControls
        global={state.global}
        focus={state.focus}
        tz={tz}
        now={now}
        onChange={({ global, focus }) => setState({ ...state, global, focus })}
        foldedClass={folded}
      />
      <div className={`rounded-lg border border-zinc-800 bg-zinc-950 p-2 ${folded}`}>
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
              focus {formatInZone(state.focus.startMs, tz)} → {formatInZone(state.focus.endMs, tz)}
            </span>
          ) : (
            <span className="ml-auto text-zinc-500 max-sm:hidden">Drag on the chart to focus a range</span>
          )}
        </div>
        {hist.status === "failed" ? (
          <QueryError what="The histogram" message={hist.message} details={hist.details} onRetry={hist.retry} />
        ) : null}
        <Histogram global={state.global} focus={state.focus} buckets={showBuckets} tz={tz} onFocus={onFocus} mode={mode} />
      </div>
      {/* On a phone the list is a screenful below the folded controls; opened, they push it down and the page scrolls. */}
      <div className="flex min-h-0 flex-1 flex-col max-sm:h-[calc(100dvh-12rem)] max-sm:min-h-80 max-sm:flex-none">
        <ResultsPanel
          client={client}
          filter={rowsFilter}
          filterText={filterText}
          tz={tz}
          onRows={onRows}
          highlight={highlight}
          namespaceId={namespaceId}
        />
      </div>
      <a
        className="self-end text-xs text-zinc-500 underline-offset-2 hover:text-zinc-300 hover:underline"
        href={`/minified/?${minifiedParams(namespaceId, state, params.get("sort"), params.get("page"))}`}
        target="_blank"
        rel="noreferrer"
      >
        Open these results on their own page
      </a>
    </div>
  );
}

/** The results page's parameters: the same namespace, range, filters, sort and page. */
function minifiedParams(namespaceId: string, state: ExplorerState, sort: string | null, page: string | null): URLSearchParams {
  const q = new URLSearchParams({ namespace: namespaceId, filter: encodeState(state) });
  if (sort) q.set("sort", sort);
  if (page) q.set("page", page);
  return q;
}

function formatBucket(ms: number): string {
  if (ms < 60_000) return `${ms / 1000}s`;
  if (ms < 3_600_000) return `${ms / 60_000}m`;
  if (ms < 86_400_000) return `${ms / 3_600_000}h`;
  return `${ms / 86_400_000}d`;
}

/** The services and hosts of the rows on screen, offered by the filter's autocomplete. */
function knownValues(answer: RowsAnswer): KnownValues {
  const services = new Set<string>();
  const hosts = new Set<string>();
  for (const row of answer.rows) {
    if (row.service && services.size < 50) services.add(row.service);
    if (row.http_req_host && hosts.size < 50) hosts.add(row.http_req_host);
  }
  return { service: [...services].sort(), "request.host": [...hosts].sort() };
}

/** Clauses of an old link that the filter language cannot say: shown so they can be seen and removed. */
function OldClauses({ clauses, onClauses }: { clauses: Clause[]; onClauses: (clauses: Clause[]) => void }) {
  return (
    <div className="flex flex-wrap items-center gap-1.5 text-xs text-zinc-400">
      <span>From an older link:</span>
      {clauses.map((c, i) => {
        const text = `${c.column} ${c.op} ${JSON.stringify(c.value)}`;
        return (
          <span
            // biome-ignore lint/suspicious/noArrayIndexKey: clauses may repeat; their position is what tells them apart
            key={`${text}-${i}`}
            className="inline-flex items-center rounded-md border border-zinc-700 bg-zinc-800 font-mono text-zinc-100"
          >
            <span className="px-2 py-0.5">{text}</span>
            <button
              type="button"
              aria-label={`Remove clause ${text}`}
              className="px-1.5 text-zinc-400 hover:text-zinc-100"
              onClick={() => onClauses(clauses.filter((_, j) => j !== i))}
            >
              ✕
            </button>
          </span>
        );
      })}
    </div>
  );
}
