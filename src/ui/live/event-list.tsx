import { observeElementRect, useVirtualizer } from "@tanstack/react-virtual";
import { type CSSProperties, memo, type RefObject, useMemo, useRef, useState } from "react";
import { dbOutcome, dbOutcomeClass, dbSystemName, dbSystemShort, isDbCall } from "~/lib/db-call.ts";
import { listUrl } from "~/lib/event-url.ts";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { formatListTime, isSameDay, noonOfDay, zoneName } from "~/lib/time/zone.ts";
import { PendingStatus, PendingWait } from "~/ui/components/pending-marker.tsx";
import { ReplayMarker } from "~/ui/components/replay-marker.tsx";
import { TlsMarker } from "~/ui/components/tls-marker.tsx";
import { UnansweredMarker } from "~/ui/components/unanswered-marker.tsx";
import { useTimeZone } from "~/ui/lib/time-zone.ts";
import { directionOf, messagePreview } from "~/ui/request-detail/websocket-messages.tsx";
import {
  type ColumnId,
  type ColumnPrefs,
  clampWidth,
  columnSpecs,
  contentType,
  defaultPrefs,
  gridTemplate,
  protocolLabel,
  remoteAddress,
  requestSize,
  responseSize,
  type Sort,
} from "./columns.ts";
import { statusClass } from "./format.ts";
import { isPendingRow } from "./pending-rows.ts";

export const ROW_HEIGHT = 28;
// By the list's own width (a phone, or beside an open detail): a narrow list keeps status, method, URL and the
// duration; the other chosen columns come back from 36rem on, each at its own (resizable) width.
const NARROW_COLUMNS = "grid-cols-[3.25rem_3.25rem_minmax(0,1fr)_3.75rem] @max-xl:gap-x-1.5 @max-xl:px-2";
const COLUMNS = `${NARROW_COLUMNS} @xl:[grid-template-columns:var(--columns)]`;
const WIDE_ONLY = "@max-xl:hidden";
/** A time column holding dates (a day other than today in the display zone) is wider unless the user sized it. */
const DATED_TIME_WIDTH = 152;

type Waterfall = { start: number; span: number };
const DEFAULT_PREFS = defaultPrefs();

/**
 * The event list, virtualised: only the rows in view (plus a few) are in the DOM, so 100,000 events scroll as
 * smoothly as 100. Row i shows rows[i]; the live frame keeps them still while the user looks at them.
 */
export function EventList({
  rows: givenRows,
  events,
  version,
  selectedId,
  onSelect,
  onScrollAway,
  scrollRef,
  initialHeight = 800,
  prefs = DEFAULT_PREFS,
  onResize,
  sort = null,
  onSort,
}: {
  /** The rows in display order (the live frame's, held still or sorted). */
  rows?: readonly TracedEvent[];
  /** Or the events oldest first, shown newest first. */
  events?: readonly TracedEvent[];
  /** Changes when `events` does (it may be mutated in place). */
  version?: number;
  selectedId: string | null;
  onSelect: (event: TracedEvent) => void;
  /** Tells whether the user scrolled away from the top rows (true) or back to them (false). */
  onScrollAway?: (isAway: boolean) => void;
  scrollRef?: RefObject<HTMLDivElement | null>;
  initialHeight?: number;
  prefs?: ColumnPrefs;
  onResize?: (column: ColumnId, width: number) => void;
  sort?: Sort;
  onSort?: (column: ColumnId) => void;
}) {
  const ownRef = useRef<HTMLDivElement | null>(null);
  const ref = scrollRef ?? ownRef;
  // biome-ignore lint/correctness/useExhaustiveDependencies: version tells that `events` changed in place
  const rows = useMemo(() => givenRows ?? (events ? events.slice().reverse() : []), [givenRows, events, version]);
  const count = rows.length;
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => ref.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    initialRect: { width: 1000, height: initialHeight },
    // A scroller not laid out yet (or a DOM without layout) reports 0: assume a screenful instead of nothing.
    observeElementRect: (instance, cb) =>
      observeElementRect(instance, (rect) => cb(rect.height > 0 ? rect : { width: rect.width, height: initialHeight })),
  });

  const items = virtualizer.getVirtualItems();
  const [zone] = useTimeZone();
  // Rows are memoised: they are given today (its noon), which changes once a day, not the clock.
  const nowMs = noonOfDay(Date.now(), zone);
  // When the first and last rows are today, the rows between are too (in practice).
  const first = rows[0];
  const last = rows[count - 1];
  const isDated = Boolean((first && !isSameDay(first.time / 1000, nowMs, zone)) || (last && !isSameDay(last.time / 1000, nowMs, zone)));
  const widths = isDated && prefs.widths.time === undefined ? { ...prefs.widths, time: DATED_TIME_WIDTH } : prefs.widths;
  const template = gridTemplate({ visible: prefs.visible, widths });
  const style = useMemo(() => ({ "--columns": template }) as CSSProperties, [template]);
  const visible = prefs.visible;

  // The waterfall's window: from the earliest start to the latest end among the rows in view.
  let waterfall: Waterfall | null = null;
  if (visible.includes("waterfall")) {
    let start = Number.POSITIVE_INFINITY;
    let end = Number.NEGATIVE_INFINITY;
    for (const item of items) {
      const event = rows[item.index];
      if (!event) continue;
      start = Math.min(start, event.time);
      end = Math.max(end, event.time + Math.max(0, event.http_duration));
    }
    if (Number.isFinite(start)) waterfall = { start, span: Math.max(1, end - start) };
  }

  return (
    <div className="@container flex min-h-0 flex-1 flex-col" role="table" aria-label="Requests" aria-rowcount={count}>
      <div role="rowgroup" className="border-b border-zinc-800 bg-zinc-900/80">
        <div
          role="row"
          style={style}
          className={`grid ${COLUMNS} gap-2 px-3 text-[11px] font-semibold tracking-wider text-zinc-400 uppercase @max-xl:tracking-normal`}
        >
          {visible.map((id) => (
            <HeaderCell
              key={id}
              id={id}
              sort={sort}
              onSort={onSort}
              onResize={onResize}
              width={widths[id] ?? columnSpecs[id].width}
              extra={id === "time" ? zoneName(zone, nowMs) : undefined}
            />
          ))}
        </div>
      </div>
      <div
        ref={ref}
        role="rowgroup"
        data-testid="event-scroll"
        className="relative min-h-0 flex-1 overflow-auto"
        onScroll={(e) => onScrollAway?.(e.currentTarget.scrollTop > ROW_HEIGHT / 2)}
      >
        <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
          {items.map((item) => {
            const event = rows[item.index];
            if (!event) return null;
            return (
              <Row
                key={item.key}
                event={event}
                top={item.start}
                index={item.index}
                isSelected={event.event_id === selectedId}
                onSelect={onSelect}
                visible={visible}
                columns={style}
                zone={zone}
                nowMs={nowMs}
                waterfallStart={waterfall?.start ?? 0}
                waterfallSpan={waterfall?.span ?? 0}
              />
            );
          })}
        </div>
      </div>
    </div>
  );
}

function HeaderCell({
  id,
  sort,
  onSort,
  onResize,
  width,
  extra,
}: {
  id: ColumnId;
  sort: Sort;
  onSort?: (column: ColumnId) => void;
  onResize?: (column: ColumnId, width: number) => void;
  width: number;
  extra?: string;
}) {
  const spec = columnSpecs[id];
  const [dragWidth, setDragWidth] = useState<number | null>(null);
  const isSorted = sort?.column === id;
  const ariaSort = isSorted ? (sort.isAscending ? "ascending" : "descending") : "none";
  const canSort = Boolean(spec.sortKey && onSort);
  const label = (
    <>
      {spec.label}
      {extra ? <span className="font-normal tracking-normal text-zinc-500 normal-case"> {extra}</span> : null}
      {isSorted ? <span aria-hidden="true">{sort.isAscending ? " ▲" : " ▼"}</span> : null}
    </>
  );
  return (
    <span
      role="columnheader"
      aria-sort={canSort ? ariaSort : undefined}
      data-column={id}
      className={`relative flex min-w-0 items-stretch ${spec.isCore ? "" : WIDE_ONLY} ${spec.isRight ? "justify-end" : ""}`}
    >
      {canSort ? (
        <button
          type="button"
          onClick={() => onSort?.(id)}
          title={`Sort by ${spec.label.toLowerCase()}`}
          className={`w-full py-1.5 whitespace-nowrap uppercase hover:text-zinc-200 @xl:truncate ${spec.isRight ? "text-right" : "text-left"} ${isSorted ? "text-zinc-200" : ""}`}
        >
          {label}
        </button>
      ) : (
        <span className="py-1.5 whitespace-nowrap @xl:truncate">{label}</span>
      )}
      {onResize && id !== "url" ? (
        <span
          role="separator"
          aria-orientation="vertical"
          aria-label={`Resize ${spec.label}`}
          aria-valuenow={dragWidth ?? width}
          aria-valuemin={40}
          aria-valuemax={600}
          tabIndex={0}
          className={`absolute top-0 -right-1.5 z-10 h-full w-2 cursor-col-resize touch-none hover:bg-sky-500/40 ${WIDE_ONLY}`}
          onKeyDown={(e) => {
            if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
            e.preventDefault();
            e.stopPropagation();
            onResize(id, clampWidth(width + (e.key === "ArrowRight" ? 8 : -8)));
          }}
          onPointerDown={(e) => {
            e.preventDefault();
            const from = e.clientX;
            const target = e.currentTarget;
            target.setPointerCapture(e.pointerId);
            const widthAt = (x: number) => clampWidth(width + (spec.isRight ? from - x : x - from));
            const move = (m: PointerEvent) => setDragWidth(widthAt(m.clientX));
            const up = (u: PointerEvent) => {
              target.removeEventListener("pointermove", move);
              target.removeEventListener("pointerup", up);
              setDragWidth(null);
              onResize(id, widthAt(u.clientX));
            };
            target.addEventListener("pointermove", move);
            target.addEventListener("pointerup", up);
          }}
        />
      ) : null}
    </span>
  );
}

const Row = memo(function Row({
  event,
  top,
  index,
  isSelected,
  onSelect,
  visible,
  columns,
  zone,
  nowMs,
  waterfallStart,
  waterfallSpan,
}: {
  event: TracedEvent;
  top: number;
  index: number;
  isSelected: boolean;
  onSelect: (event: TracedEvent) => void;
  visible: readonly ColumnId[];
  columns: CSSProperties;
  zone: TimeZoneMode;
  nowMs: number;
  waterfallStart: number;
  waterfallSpan: number;
}) {
  return (
    <div
      role="row"
      aria-rowindex={index + 1}
      aria-selected={isSelected}
      data-event-id={event.event_id}
      data-pending={isPendingRow(event) || undefined}
      data-replay={event.replay_of ? "" : undefined}
      data-ws-direction={event.protocol === "ws" ? event.ws_direction : undefined}
      tabIndex={-1}
      onClick={() => onSelect(event)}
      onKeyDown={(e) => {
        if (e.key === "Enter") onSelect(event);
      }}
      style={{ ...columns, position: "absolute", top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${top}px)` }}
      className={`grid ${COLUMNS} cursor-pointer items-center gap-2 border-b border-zinc-900 px-3 font-mono text-xs ${isSelected ? "bg-zinc-800" : "hover:bg-zinc-900"}`}
    >
      {visible.map((id) => (
        <Cell key={id} id={id} event={event} zone={zone} nowMs={nowMs} waterfallStart={waterfallStart} waterfallSpan={waterfallSpan} />
      ))}
    </div>
  );
});

function Cell({
  id,
  event,
  zone,
  nowMs,
  waterfallStart,
  waterfallSpan,
}: {
  id: ColumnId;
  event: TracedEvent;
  zone: TimeZoneMode;
  nowMs: number;
  waterfallStart: number;
  waterfallSpan: number;
}) {
  const wide = columnSpecs[id].isCore ? "" : WIDE_ONLY;
  const isMessage = event.protocol === "ws";
  switch (id) {
    case "time":
      return (
        <span role="cell" className={`truncate text-zinc-400 tabular-nums ${wide}`}>
          {formatListTime(event.time, zone, nowMs)}
        </span>
      );
    case "status":
      return <StatusCell event={event} />;
    case "method":
      return <MethodCell event={event} />;
    case "url":
      return isMessage ? (
        <span role="cell" className={`truncate pl-3 ${event.ws_opcode === "text" ? "text-zinc-300" : "text-zinc-400"}`}>
          {messagePreview(event)}
        </span>
      ) : (
        <span role="cell" className="flex min-w-0 items-center gap-1.5 text-zinc-200">
          {event.http_is_outgoing ? (
            <span role="img" className="shrink-0 text-sky-400" title="Outbound call made by the program" aria-label="outbound">
              ↗
            </span>
          ) : null}
          <TlsMarker event={event} />
          <UnansweredMarker event={event} />
          <ReplayMarker event={event} />
          <UrlText url={listUrl(event)} />
        </span>
      );
    case "duration":
      return <DurationCell event={event} />;
    case "protocol":
      return (
        <span role="cell" className={`truncate text-zinc-400 ${wide}`}>
          {protocolLabel(event)}
        </span>
      );
    case "service":
      return (
        <span
          role="cell"
          className={`truncate text-zinc-400 ${wide}`}
          title={event.hostname ? `${event.service} on ${event.hostname}` : undefined}
        >
          {event.service || event.hostname}
        </span>
      );
    case "remote":
      return (
        <span role="cell" className={`truncate text-zinc-400 ${wide}`} title={event.http_is_outgoing ? "Server called" : "Client"}>
          {remoteAddress(event)}
        </span>
      );
    case "contentType":
      return (
        <span role="cell" className={`truncate text-zinc-400 ${wide}`}>
          {isMessage ? event.ws_opcode : contentType(event)}
        </span>
      );
    case "requestSize":
      return (
        <span role="cell" className={`truncate text-right text-zinc-400 tabular-nums ${wide}`}>
          {isMessage ? "" : formatBytes(requestSize(event))}
        </span>
      );
    case "size":
      return (
        <span role="cell" className={`truncate text-right text-zinc-400 tabular-nums ${wide}`}>
          {isPendingRow(event) ? "" : formatBytes(responseSize(event))}
        </span>
      );
    case "waterfall":
      return (
        <span role="cell" className={`relative h-2.5 ${wide}`}>
          {waterfallSpan > 0 ? <WaterfallBar event={event} start={waterfallStart} span={waterfallSpan} /> : null}
        </span>
      );
  }
}

/**
 * A long URL gives way at its head: the last path segment and the query stay readable in a narrow column, so
 * `/api/users/17` and `/api/users/18` stay apart.
 */
function UrlText({ url }: { url: string }) {
  const end = url.search(/[?#]/);
  const lastSlash = url.lastIndexOf("/", end < 0 ? url.length : end);
  const at = Math.max(lastSlash, url.length - 28);
  if (at <= 0) return <span className="truncate">{url}</span>;
  return (
    <span className="flex min-w-0" title={url}>
      <span className="min-w-0 truncate">{url.slice(0, at)}</span>
      <span className="max-w-full shrink-0 truncate">{url.slice(at)}</span>
    </span>
  );
}

function StatusCell({ event }: { event: TracedEvent }) {
  if (event.protocol === "ws") {
    const direction = directionOf(event);
    return (
      <span role="cell" className={direction.className}>
        <span role="img" aria-label={direction.label} title={direction.label}>
          {direction.arrow}
        </span>
      </span>
    );
  }
  if (isDbCall(event)) {
    return (
      <span role="cell" className={`truncate ${dbOutcomeClass(event)}`} title={event.db_error_message || undefined}>
        {dbOutcome(event)}
      </span>
    );
  }
  return (
    <span role="cell" className={statusClass(event.http_resp_status_code)}>
      {isPendingRow(event) ? <PendingStatus /> : event.http_resp_status_code || "—"}
    </span>
  );
}

function MethodCell({ event }: { event: TracedEvent }) {
  if (event.protocol === "ws") {
    return (
      <span role="cell" className="text-zinc-400">
        WS
      </span>
    );
  }
  if (isDbCall(event)) {
    return (
      <span role="cell" className="truncate font-semibold text-violet-300" title={`${dbSystemName(event.db_system)} ${event.db_operation}`}>
        {dbSystemShort(event.db_system)}
      </span>
    );
  }
  return (
    <span role="cell" className="truncate font-semibold text-zinc-200">
      {event.http_req_method || event.protocol.toUpperCase()}
    </span>
  );
}

function DurationCell({ event }: { event: TracedEvent }) {
  if (event.protocol === "ws") return <span role="cell" className="text-right text-zinc-500" />;
  return (
    <span role="cell" className="text-right text-zinc-300 tabular-nums">
      {isPendingRow(event) ? <PendingWait since={event.time} /> : formatDuration(event.http_duration)}
    </span>
  );
}

/** Where the exchange started and how long it lasted, within the window of the rows in view. */
function WaterfallBar({ event, start, span }: { event: TracedEvent; start: number; span: number }) {
  const left = ((event.time - start) / span) * 100;
  const width = (Math.max(0, event.http_duration) / span) * 100;
  return (
    <span
      role="img"
      aria-label={`starts ${formatDuration(event.time - start)} into the window, lasts ${formatDuration(event.http_duration)}`}
      data-waterfall-left={left.toFixed(1)}
      data-waterfall-width={width.toFixed(1)}
      className={`absolute inset-y-0 min-w-0.5 rounded-sm ${event.http_is_outgoing ? "bg-sky-400/70" : "bg-emerald-400/70"}`}
      style={{ left: `${left}%`, width: `${width}%` }}
    />
  );
}
