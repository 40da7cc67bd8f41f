import { useCallback, useEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import type { HighlightTerms } from "~/lib/filter/search.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { maxRowLimit, type QueryFilter, type ResultRow } from "~/lib/protocol/query.ts";
import { maxEventsPerRequest } from "~/lib/protocol/tunnel.ts";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { PercentileSentence } from "~/ui/endpoints/percentile-sentence.tsx";
import { downloadHar } from "~/ui/request-detail/har-download.ts";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { decodePage, decodeSort, encodePage, encodeSort, eventIdParam, maxPage, pageOffset, requestLink } from "./explorer-state.ts";
import type { QueryClient, RowsAnswer } from "./query-client.ts";
import { QueryError } from "./query-error.tsx";
import { ResultsList, rowLimitText, type Sort } from "./results-list.tsx";
import { useQuery } from "./use-query.ts";

export const safariText = "This feature does not work on Safari yet. Consider using a supported browser like Chrome or Firefox.";

export function isSafari(userAgent: string): boolean {
  return /safari/i.test(userAgent) && !/chrome|chromium|crios|fxios|android|edg/i.test(userAgent);
}

type Detail =
  | { status: "loading"; id: string }
  | { status: "done"; event: TracedEvent; children: TracedEvent[] }
  | { status: "failed"; id: string; message: string };

/**
 * The explorer's results (the embedded page at /minified/): rows of the focus range from the store,
 * the row-limit message, and the request detail of a clicked row (full event and its outbound calls).
 */
export function ResultsPanel({
  client,
  filter,
  filterText,
  tz,
  onRows,
  highlight,
  namespaceId,
}: {
  client: QueryClient;
  filter: QueryFilter;
  filterText: string;
  tz: TimeZoneMode;
  onRows?: (answer: RowsAnswer) => void;
  /** What the filter's content conditions look for, marked in the detail's headers and bodies. */
  highlight?: HighlightTerms;
  /** The namespace the rows are from: the detail offers Resend with it. */
  namespaceId?: string;
}) {
  // The sort, the page of it and the open request live in the URL (`sort`, `page`, `event`): a reload or a shared
  // URL shows the same.
  const [params, setParams] = useSearchParams();
  const sort = decodeSort(params.get("sort"));
  const page = decodePage(params.get("page"));
  const openId = eventIdParam(params.get("event"));
  const setParam = useCallback(
    (values: Record<string, string | null>, replace: boolean) =>
      setParams(
        (p) => {
          const q = new URLSearchParams(p);
          for (const [name, value] of Object.entries(values)) {
            if (value === null) q.delete(name);
            else q.set(name, value);
          }
          return q;
        },
        { replace, preventScrollReset: true },
      ),
    [setParams],
  );
  // Another sort is another list: it starts at its first page.
  const setSort = (next: Sort) => setParam({ sort: encodeSort(next), page: null }, false);
  const setPage = (next: number) => setParam({ page: encodePage(next) }, false);
  const [detail, setDetail] = useState<Detail | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [safari, setSafari] = useState(false);
  useEffect(() => setSafari(isSafari(navigator.userAgent)), []);

  const key = JSON.stringify([filter, filterText, sort, page]);
  // One query for the whole page (up to the row limit): a smaller page first was measured slower here, since both
  // queries pay the store's filtered count scan (bench/README.md, explorer). The store sorts the whole range, so
  // the first page of a sort is the top of everything that matches, not of the newest rows. The answer keeps its
  // page, so the sentence above the list matches the rows under it while the next page loads.
  const rows = useQuery<RowsAnswer & { page: number }>(key, async (signal) => ({
    ...(await client.rows(filter, filterText, signal, sort, pageOffset(page))),
    page,
  }));
  useEffect(() => {
    if (rows.status === "done") onRows?.(rows.data);
  }, [rows.status, rows.data, onRows]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: attempt re-runs the read
  useEffect(() => {
    if (!openId) {
      setDetail(null);
      return;
    }
    const controller = new AbortController();
    setDetail((d) => (d?.status === "done" && d.event.event_id === openId ? d : { status: "loading", id: openId }));
    client.detail(openId, controller.signal).then(
      (d) => {
        if (controller.signal.aborted) return;
        setDetail(
          d
            ? { status: "done", event: d.event, children: d.children }
            : { status: "failed", id: openId, message: "This request is not stored in this namespace (it may have expired)." },
        );
      },
      (err: Error) => {
        if (!controller.signal.aborted) setDetail({ status: "failed", id: openId, message: err.message });
      },
    );
    return () => controller.abort();
  }, [client, openId, attempt]);
  const open = (id: string) => setParam({ event: id }, true);
  const link = useMemo(() => (detail?.status === "done" ? requestLink(window.location.href, detail.event) : undefined), [detail]);

  const saveAll = async () => {
    const ids = (rows.data?.rows ?? []).slice(0, maxEventsPerRequest).map((r: ResultRow) => r.event_id);
    const events = await client.events(ids);
    downloadHar(events, "requests.har");
  };

  const selectedId = detail ? (detail.status === "done" ? detail.event.event_id : detail.id) : null;
  const answer = rows.data;

  return (
    <div className="relative flex min-h-0 flex-1 overflow-hidden rounded-lg border border-zinc-800 bg-zinc-950" data-testid="results">
      <div className="flex min-w-0 flex-1 flex-col">
        <div className="flex items-center gap-3 border-b border-zinc-800 px-3 py-1.5 text-xs text-zinc-400" aria-live="polite">
          {answer ? (
            <span data-testid="result-count">
              {answer.actualNumberOfRows.toLocaleString("en-US")} request
              {answer.actualNumberOfRows === 1 ? "" : "s"}
            </span>
          ) : null}
          {rows.status === "loading" ? <span className="text-zinc-500">Loading…</span> : null}
        </div>
        {answer && (answer.actualNumberOfRows > maxRowLimit || answer.page > 1) ? <Pager answer={answer} onPage={setPage} /> : null}
        {rows.status === "failed" ? (
          <QueryError what="The requests" message={rows.message} details={rows.details} onRetry={rows.retry} />
        ) : null}
        {answer && answer.rows.length === 0 && answer.page === 1 && rows.status === "done" ? (
          <p className="p-6 text-sm text-zinc-500">No requests in this time range match.</p>
        ) : null}
        {answer && answer.rows.length > 0 ? (
          <ResultsList
            // A new page starts at its top.
            key={answer.page}
            rows={answer.rows}
            tz={tz}
            sort={sort}
            onSort={setSort}
            selectedId={selectedId}
            onSelect={(r) => open(r.event_id)}
          />
        ) : null}
      </div>
      {detail ? (
        // On a phone the detail is a full-screen sheet over the explorer; wider, a side panel that leaves the list
        // room for its time, duration and size.
        <div className="fixed inset-0 z-40 flex flex-col sm:static sm:z-auto sm:w-[42%] sm:max-w-[40rem] sm:min-w-80 sm:shrink-0 sm:border-l sm:border-zinc-800">
          {detail.status === "done" ? <PercentileSentence client={client} event={detail.event} filter={filter} /> : null}
          {detail.status === "done" ? (
            <RequestDetail
              event={detail.event}
              outboundCalls={detail.children}
              highlight={highlight}
              onOpen={(e) => open(e.event_id)}
              onClose={() => setParam({ event: null }, true)}
              link={link}
              onSaveHar={(e) =>
                downloadHar([e, ...(e.event_id === detail.event.event_id ? detail.children : [])], `request-${e.event_id}.har`)
              }
              onSaveAllHar={() => void saveAll()}
              namespaceId={namespaceId}
            />
          ) : (
            <div className="flex h-full flex-col bg-zinc-900">
              <div className="flex justify-end p-1">
                <button
                  type="button"
                  aria-label="Close detail"
                  onClick={() => setParam({ event: null }, true)}
                  className="rounded p-1 text-zinc-400 hover:bg-zinc-800 hover:text-zinc-100"
                >
                  ✕
                </button>
              </div>
              {detail.status === "loading" ? (
                <p className="p-4 text-sm text-zinc-500">Loading the request…</p>
              ) : (
                <QueryError what="The request" message={detail.message} onRetry={() => setAttempt((n) => n + 1)} />
              )}
            </div>
          )}
        </div>
      ) : null}
      {safari ? (
        <div
          role="alert"
          className="absolute inset-0 z-10 flex items-center justify-center bg-zinc-950/90 p-8 text-center text-sm text-zinc-200"
        >
          {safariText}
        </div>
      ) : null}
    </div>
  );
}

/**
 * Where the page sits in the sort, with the way to the previous and the next page of it, up to the deepest page the
 * store reads.
 */
function Pager({ answer, onPage }: { answer: RowsAnswer & { page: number }; onPage: (page: number) => void }) {
  const offset = pageOffset(answer.page);
  const last = offset + answer.rows.length;
  const next = Math.min(maxRowLimit, answer.actualNumberOfRows - last);
  const hasNext = next > 0 && answer.rows.length > 0 && answer.page < maxPage;
  // Paging is ordinary; rows the list cannot reach (or none on the page) are worth the warning colour.
  const stuck = answer.rows.length === 0 || (next > 0 && !hasNext);
  const tone = stuck ? "border-amber-500/30 bg-amber-500/10 text-amber-200" : "border-zinc-800 bg-zinc-900/60 text-zinc-300";
  const button = "rounded border border-zinc-600 px-2 py-0.5 whitespace-nowrap text-zinc-100 hover:bg-zinc-700/60";
  return (
    <div className={`flex flex-wrap items-center gap-x-3 gap-y-1 border-b px-3 py-1.5 text-xs ${tone}`}>
      <p role="status" data-testid="row-limit" className="min-w-0 flex-1">
        {rowLimitText(answer.actualNumberOfRows, offset, answer.rows.length)}
      </p>
      <nav aria-label="Pages of the list" className="flex gap-2">
        {answer.rows.length === 0 ? (
          <button type="button" className={button} onClick={() => onPage(1)}>
            « First page
          </button>
        ) : answer.page > 1 ? (
          <button type="button" className={button} onClick={() => onPage(answer.page - 1)}>
            ‹ Previous {maxRowLimit.toLocaleString("en-US")}
          </button>
        ) : null}
        {hasNext ? (
          <button type="button" className={button} onClick={() => onPage(answer.page + 1)}>
            Next {next.toLocaleString("en-US")} ›
          </button>
        ) : null}
      </nav>
    </div>
  );
}
