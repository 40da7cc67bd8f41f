import { observeElementRect, useVirtualizer } from "@tanstack/react-virtual";
import { useRef } from "react";
import { dbOutcome, dbOutcomeClass, dbSystemName, dbSystemShort, isDbCall } from "~/lib/db-call.ts";
import { displayUrl, eventOrigin } from "~/lib/event-url.ts";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import { maxRowLimit, maxRowOffset, type ResultRow } from "~/lib/protocol/query.ts";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { zoneName } from "~/lib/time/zone.ts";
import { TlsMarker } from "~/ui/components/tls-marker.tsx";
import { UnansweredMarker } from "~/ui/components/unanswered-marker.tsx";
import { statusClass } from "~/ui/live/format.ts";
import { directionOf } from "~/ui/request-detail/websocket-messages.tsx";

export const ROW_HEIGHT = 28;
// By the list's own width: a phone's list keeps method, status and URL; beside the detail it adds the time of day,
// duration and size; wider still, the time shows its date.
const COLUMNS =
  "grid-cols-[3.5rem_3.25rem_minmax(0,1fr)] @lg:grid-cols-[6.5rem_3.5rem_3rem_minmax(6rem,1fr)_5.5rem_4rem] @3xl:grid-cols-[11.5rem_4rem_3rem_minmax(8rem,1fr)_5.5rem_4.5rem]";
const WIDE_ONLY = "@max-lg:hidden";

export type SortKey =
  | "time"
  | "http_req_method"
  | "http_resp_status_code"
  | "http_req_path"
  | "http_duration"
  | "http_resp_body_size_bytes_wire";
export type Sort = { key: SortKey; dir: "asc" | "desc" };

const columns: { key: SortKey; label: string; right?: boolean; isWideOnly?: boolean }[] = [
  { key: "time", label: "Time", isWideOnly: true },
  { key: "http_req_method", label: "Method" },
  { key: "http_resp_status_code", label: "Status" },
  { key: "http_req_path", label: "URL" },
  { key: "http_duration", label: "Duration", right: true, isWideOnly: true },
  { key: "http_resp_body_size_bytes_wire", label: "Size", right: true, isWideOnly: true },
];

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** Event time (µs) in the zone shown, to the millisecond. */
export function formatRowTime(timeUs: number, tz: TimeZoneMode): string {
  const d = new Date(Math.floor(timeUs / 1000));
  const u = tz === "UTC";
  const date = `${u ? d.getUTCFullYear() : d.getFullYear()}-${pad((u ? d.getUTCMonth() : d.getMonth()) + 1)}-${pad(u ? d.getUTCDate() : d.getDate())}`;
  const time = `${pad(u ? d.getUTCHours() : d.getHours())}:${pad(u ? d.getUTCMinutes() : d.getMinutes())}:${pad(u ? d.getUTCSeconds() : d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  return `${date} ${time}`;
}

const count = (v: number) => v.toLocaleString("en-US");

/**
 * Where a page of the list sits in its sort, for a range that holds more rows than one page (or a page past the
 * first): `total` rows matched, the page skipped `offset` of them and holds `shown`. Its numbers are written as the
 * count beside it is ("15,300"). At the deepest page the store reads, it says how to see the rest.
 */
export function rowLimitText(total: number, offset = 0, shown = Math.min(total - offset, maxRowLimit)): string {
  if (shown <= 0) return `No rows here: the ${count(total)} matching rows end before row ${count(offset + 1)}.`;
  const last = offset + shown;
  const rows = `Rows ${count(offset + 1)}–${count(last)} of ${count(total)}`;
  if (last < total && offset + maxRowLimit > maxRowOffset) {
    return `${rows}. The list pages no further than row ${count(last)} of a sort: narrow the range or the filters to see more.`;
  }
  return `${rows}.`;
}

/** The results of the focus range in the order the store sorted them (newest first by default), virtualised. */
export function ResultsList({
  rows,
  tz,
  sort,
  onSort,
  selectedId,
  onSelect,
}: {
  rows: ResultRow[];
  tz: TimeZoneMode;
  sort: Sort;
  onSort: (sort: Sort) => void;
  selectedId: string | null;
  onSelect: (row: ResultRow) => void;
}) {
  const ref = useRef<HTMLDivElement | null>(null);
  const sorted = rows;
  const virtualizer = useVirtualizer({
    count: sorted.length,
    getScrollElement: () => ref.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 10,
    initialRect: { width: 1000, height: 600 },
    observeElementRect: (instance, cb) =>
      observeElementRect(instance, (rect) => cb(rect.height > 0 ? rect : { width: rect.width, height: 600 })),
  });
  const items = virtualizer.getVirtualItems();

  return (
    <div className="@container flex min-h-0 flex-1 flex-col" role="table" aria-label="Results" aria-rowcount={sorted.length}>
      <div role="rowgroup" className="border-b border-zinc-800 bg-zinc-900/80">
        <div role="row" className={`grid ${COLUMNS} gap-2 px-3 py-1.5 text-[11px] font-semibold tracking-wider text-zinc-400 uppercase`}>
          {columns.map((c) => {
            const active = sort.key === c.key;
            const ariaSort = active ? (sort.dir === "asc" ? "ascending" : "descending") : "none";
            return (
              <span
                role="columnheader"
                aria-sort={ariaSort}
                key={c.key}
                className={`${c.right ? "text-right" : ""} ${c.isWideOnly ? WIDE_ONLY : ""}`}
              >
                <button
                  type="button"
                  className={`whitespace-nowrap uppercase hover:text-zinc-100 ${active ? "text-zinc-100" : ""}`}
                  onClick={() =>
                    onSort({
                      key: c.key,
                      dir: active && sort.dir === "desc" ? "asc" : "desc",
                    })
                  }
                >
                  {c.label}
                  {c.key === "time" ? (
                    <span className="ml-1 font-normal tracking-normal text-zinc-500 normal-case">{zoneName(tz)}</span>
                  ) : null}
                  {active ? (sort.dir === "desc" ? " ↓" : " ↑") : ""}
                </button>
              </span>
            );
          })}
        </div>
      </div>
      <div ref={ref} className="min-h-0 flex-1 overflow-auto" data-testid="results-scroll">
        <div role="rowgroup" className="relative w-full" style={{ height: virtualizer.getTotalSize() }}>
          {items.map((item) => {
            const row = sorted[item.index]!;
            const selected = row.event_id === selectedId;
            return (
              <div
                key={row.event_id}
                role="row"
                aria-selected={selected}
                data-event-id={row.event_id}
                tabIndex={-1}
                onClick={() => onSelect(row)}
                onKeyDown={(e) => {
                  if (e.key === "Enter") onSelect(row);
                }}
                className={`absolute left-0 grid w-full ${COLUMNS} cursor-pointer gap-2 px-3 font-mono text-xs leading-7 ${selected ? "bg-sky-500/15" : "hover:bg-zinc-800/60"}`}
                style={{ top: item.start, height: ROW_HEIGHT }}
              >
                <span role="cell" className={`truncate text-zinc-400 ${WIDE_ONLY}`} title={formatRowTime(row.time, tz)}>
                  <span className="@max-3xl:hidden">{formatRowTime(row.time, tz).slice(0, 11)}</span>
                  {formatRowTime(row.time, tz).slice(11)}
                </span>
                {isDbCall(row) ? (
                  <>
                    <span role="cell" className="truncate font-semibold text-violet-300" title={dbSystemName(row.db_system)}>
                      {dbSystemShort(row.db_system)}
                    </span>
                    <span role="cell" className={`truncate ${dbOutcomeClass(row)}`}>
                      {dbOutcome(row)}
                    </span>
                  </>
                ) : (
                  <>
                    <span role="cell" className="truncate font-semibold text-zinc-200">
                      {row.http_is_outgoing ? <span className="text-sky-400">↗ </span> : null}
                      {row.http_req_method || (row.protocol === "ws" ? "WS" : "—")}
                    </span>
                    {row.protocol === "ws" ? (
                      <span role="cell" className={directionOf(row).className}>
                        <span role="img" aria-label={directionOf(row).label} title={directionOf(row).label}>
                          {directionOf(row).arrow}
                        </span>
                      </span>
                    ) : (
                      <span role="cell" className={statusClass(row.http_resp_status_code ?? 0)}>
                        {row.http_resp_status_code || "—"}
                      </span>
                    )}
                  </>
                )}
                <span role="cell" className="truncate text-zinc-200" title={displayUrl(row)}>
                  <TlsMarker event={row} />
                  <UnansweredMarker event={row} />
                  {row.protocol === "ws" ? (
                    <span className="text-zinc-400">
                      WebSocket {row.ws_opcode} · {formatBytes(row.ws_size ?? Number.NaN)}
                    </span>
                  ) : row.protocol === "tcp" || row.protocol === "db" || row.http_req_method === "CONNECT" ? (
                    displayUrl(row)
                  ) : (
                    <>
                      {row.http_is_outgoing ? <span className="text-zinc-500">{eventOrigin(row)}</span> : null}
                      {row.http_req_path || "/"}
                    </>
                  )}
                </span>
                <span role="cell" className={`text-right text-zinc-400 ${WIDE_ONLY}`}>
                  {formatDuration(row.http_duration ?? Number.NaN)}
                </span>
                <span role="cell" className={`text-right text-zinc-500 ${WIDE_ONLY}`}>
                  {isDbCall(row) ? "" : formatBytes(row.http_resp_body_size_bytes_wire ?? Number.NaN)}
                </span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
