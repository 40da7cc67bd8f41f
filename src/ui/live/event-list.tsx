import { observeElementRect, useVirtualizer } from "@tanstack/react-virtual";
import { memo, type RefObject, useRef } from "react";
import { dbOutcome, dbOutcomeClass, dbSystemName, dbSystemShort, isDbCall } from "~/lib/db-call.ts";
import { displayUrl } from "~/lib/event-url.ts";
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
import { statusClass } from "./format.ts";
import { isPendingRow } from "./pending-rows.ts";

export const ROW_HEIGHT = 28;
// By the list's own width (a phone, or beside an open detail): a narrow list keeps status, method, URL and the
// duration (moved to the row's end); time and size come back from 36rem on. The time column is wider when it holds
// dates (a day other than today in the display zone).
const NARROW_COLUMNS = "grid-cols-[3.25rem_3.25rem_minmax(0,1fr)_3.75rem] @max-xl:gap-x-1.5 @max-xl:px-2";
const COLUMNS = `${NARROW_COLUMNS} @xl:grid-cols-[6rem_4.5rem_3.25rem_3.75rem_minmax(0,1fr)_4.5rem]`;
const DATED_COLUMNS = `${NARROW_COLUMNS} @xl:grid-cols-[9.5rem_4.5rem_3.25rem_3.75rem_minmax(0,1fr)_4.5rem]`;
const WIDE_ONLY = "@max-xl:hidden";
const LAST_WHEN_NARROW = "@max-xl:order-last";

/**
 * The event list, newest first, virtualised: only the rows in view (plus a few) are in the DOM, so
 * 100,000 events scroll as smoothly as 100. `events` is oldest first; row i shows events[length-1-i].
 */
export function EventList({
  events,
  version,
  selectedId,
  onSelect,
  onScrollAway,
  scrollRef,
  initialHeight = 800,
}: {
  events: TracedEvent[];
  version: number;
  selectedId: string | null;
  onSelect: (event: TracedEvent) => void;
  /** Tells whether the user scrolled away from the newest rows (true) or back to them (false). */
  onScrollAway?: (isAway: boolean) => void;
  scrollRef?: RefObject<HTMLDivElement | null>;
  initialHeight?: number;
}) {
  const ownRef = useRef<HTMLDivElement | null>(null);
  const ref = scrollRef ?? ownRef;
  const count = events.length;
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
  // Oldest first: when the oldest and newest are today, the rows between are too (in practice).
  const first = events[0];
  const last = events[count - 1];
  const isDated = Boolean((first && !isSameDay(first.time / 1000, nowMs, zone)) || (last && !isSameDay(last.time / 1000, nowMs, zone)));
  const columns = isDated ? DATED_COLUMNS : COLUMNS;
  return (
    <div className="@container flex min-h-0 flex-1 flex-col" role="table" aria-label="Requests" aria-rowcount={count}>
      <div role="rowgroup" className="border-b border-zinc-800 bg-zinc-900/80">
        <div
          role="row"
          className={`grid ${columns} gap-2 px-3 py-1.5 text-[11px] font-semibold tracking-wider text-zinc-400 uppercase @max-xl:tracking-normal`}
        >
          <span role="columnheader" className={WIDE_ONLY}>
            Time <span className="font-normal tracking-normal text-zinc-500 normal-case">{zoneName(zone, nowMs)}</span>
          </span>
          <span role="columnheader" className={`text-right ${LAST_WHEN_NARROW}`}>
            Duration
          </span>
          <span role="columnheader">Status</span>
          <span role="columnheader">Method</span>
          <span role="columnheader">URL</span>
          <span role="columnheader" className={`text-right ${WIDE_ONLY}`}>
            Size
          </span>
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
            const event = events[count - 1 - item.index];
            if (!event) return null;
            return (
              <Row
                key={item.key}
                event={event}
                top={item.start}
                index={item.index}
                isSelected={event.event_id === selectedId}
                onSelect={onSelect}
                columns={columns}
                zone={zone}
                nowMs={nowMs}
              />
            );
          })}
        </div>
      </div>
    </div>
  );
}

const Row = memo(function Row({
  event,
  top,
  index,
  isSelected,
  onSelect,
  columns,
  zone,
  nowMs,
}: {
  event: TracedEvent;
  top: number;
  index: number;
  isSelected: boolean;
  onSelect: (event: TracedEvent) => void;
  columns: string;
  zone: TimeZoneMode;
  nowMs: number;
}) {
  if (event.protocol === "ws") {
    return (
      <MessageRow
        event={event}
        top={top}
        index={index}
        isSelected={isSelected}
        onSelect={onSelect}
        columns={columns}
        zone={zone}
        nowMs={nowMs}
      />
    );
  }
  const isPending = isPendingRow(event);
  return (
    <div
      role="row"
      aria-rowindex={index + 1}
      aria-selected={isSelected}
      data-event-id={event.event_id}
      data-pending={isPending || undefined}
      data-replay={event.replay_of ? "" : undefined}
      tabIndex={-1}
      onClick={() => onSelect(event)}
      onKeyDown={(e) => {
        if (e.key === "Enter") onSelect(event);
      }}
      style={{ position: "absolute", top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${top}px)` }}
      className={`grid ${columns} cursor-pointer items-center gap-2 border-b border-zinc-900 px-3 font-mono text-xs ${isSelected ? "bg-zinc-800" : "hover:bg-zinc-900"}`}
    >
      <span role="cell" className={`text-zinc-400 tabular-nums ${WIDE_ONLY}`}>
        {formatListTime(event.time, zone, nowMs)}
      </span>
      <span role="cell" className={`text-right text-zinc-300 tabular-nums ${LAST_WHEN_NARROW}`}>
        {isPending ? <PendingWait since={event.time} /> : formatDuration(event.http_duration)}
      </span>
      {isDbCall(event) ? (
        <>
          <span role="cell" className={`truncate ${dbOutcomeClass(event)}`} title={event.db_error_message || undefined}>
            {dbOutcome(event)}
          </span>
          <span
            role="cell"
            className="truncate font-semibold text-violet-300"
            title={`${dbSystemName(event.db_system)} ${event.db_operation}`}
          >
            {dbSystemShort(event.db_system)}
          </span>
        </>
      ) : (
        <>
          <span role="cell" className={`truncate ${statusClass(event.http_resp_status_code)}`}>
            {isPending ? <PendingStatus /> : event.http_resp_status_code || "—"}
          </span>
          <span role="cell" className="font-semibold text-zinc-200">
            {event.http_req_method || event.protocol.toUpperCase()}
          </span>
        </>
      )}
      <span role="cell" className="flex min-w-0 items-center gap-1.5 text-zinc-200">
        {event.http_is_outgoing ? (
          <span role="img" className="shrink-0 text-sky-400" title="Outbound call made by the program" aria-label="outbound">
            ↗
          </span>
        ) : null}
        <TlsMarker event={event} />
        <UnansweredMarker event={event} />
        <ReplayMarker event={event} />
        <span className="truncate">{displayUrl(event)}</span>
      </span>
      <span role="cell" className={`text-right text-zinc-400 tabular-nums ${WIDE_ONLY}`}>
        {/* A database call's result has no body: what came back is its bytes. */}
        {isPending ? "" : formatBytes(isDbCall(event) ? event.bytes_received : event.http_resp_body_size_bytes_wire)}
      </span>
    </div>
  );
});

/** A WebSocket message: an arrow for who sent it where the status goes, WS as its method, a preview as its URL. */
function MessageRow({
  event,
  top,
  index,
  isSelected,
  onSelect,
  columns,
  zone,
  nowMs,
}: {
  event: TracedEvent;
  top: number;
  index: number;
  isSelected: boolean;
  onSelect: (event: TracedEvent) => void;
  columns: string;
  zone: TimeZoneMode;
  nowMs: number;
}) {
  const direction = directionOf(event);
  return (
    <div
      role="row"
      aria-rowindex={index + 1}
      aria-selected={isSelected}
      data-event-id={event.event_id}
      data-ws-direction={event.ws_direction}
      tabIndex={-1}
      onClick={() => onSelect(event)}
      onKeyDown={(e) => {
        if (e.key === "Enter") onSelect(event);
      }}
      style={{ position: "absolute", top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${top}px)` }}
      className={`grid ${columns} cursor-pointer items-center gap-2 border-b border-zinc-900 px-3 font-mono text-xs ${isSelected ? "bg-zinc-800" : "hover:bg-zinc-900"}`}
    >
      <span role="cell" className={`text-zinc-400 tabular-nums ${WIDE_ONLY}`}>
        {formatListTime(event.time, zone, nowMs)}
      </span>
      <span role="cell" className={`text-right text-zinc-500 ${LAST_WHEN_NARROW}`} />
      <span role="cell" className={direction.className}>
        <span role="img" aria-label={direction.label} title={direction.label}>
          {direction.arrow}
        </span>
      </span>
      <span role="cell" className="text-zinc-400">
        WS
      </span>
      <span role="cell" className={`truncate pl-3 ${event.ws_opcode === "text" ? "text-zinc-300" : "text-zinc-400"}`}>
        {messagePreview(event)}
      </span>
      <span role="cell" className={`text-right text-zinc-400 tabular-nums ${WIDE_ONLY}`}>
        {formatBytes(event.ws_size >= 0 ? event.ws_size : event.ws_wire_size)}
      </span>
    </div>
  );
}
