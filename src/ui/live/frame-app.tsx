import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { highlightTerms } from "~/lib/filter/search.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { ZoneToggle } from "~/ui/components/zone-toggle.tsx";
import { downloadHar } from "../request-detail/har-download.ts";
import { RequestDetail } from "../request-detail/request-detail.tsx";
import {
  type ColumnId,
  type ColumnPrefs,
  columnIds,
  columnSpecs,
  displayOrder,
  loadPrefs,
  nextSort,
  type Sort,
  savePrefs,
} from "./columns.ts";
import { EventList } from "./event-list.tsx";
import { liveSocketUrlFromFragment } from "./frame-url.ts";
import type { SocketState } from "./live-socket.ts";
import { isPendingRow } from "./pending-rows.ts";
import { useHold, useThrottled } from "./use-hold.ts";
import { postToParent, useLiveFrameState } from "./use-live-frame-state.ts";

/** A sorted list of up to this many rows is re-sorted at each new event; a longer one every RESORT_MS. */
const RESORT_EVERY_EVENT_UP_TO = 5000;
const RESORT_MS = 500;

type FrameParams = {
  socketUrl: string | null;
  namespaceId: string | null;
  openEventId: string | null;
  userKey: string | null;
  isBadUrl: boolean;
};

function readParams(): FrameParams {
  const search = new URLSearchParams(window.location.search);
  const hasUrl = new URLSearchParams(window.location.hash.replace(/^#/, "")).has("url");
  const socketUrl = liveSocketUrlFromFragment(window.location.hash, window.location);
  return {
    socketUrl,
    namespaceId: search.get("namespace"),
    openEventId: search.get("event"),
    userKey: search.get("user"),
    isBadUrl: hasUrl && !socketUrl,
  };
}

/** The page that embeds us, when it is ours (same origin): where Copy link points. */
function parentHref(): string | null {
  try {
    if (window.parent === window) return null;
    return window.parent.location.href;
  } catch {
    return null;
  }
}

/**
 * /iframer: the live event list and the request detail. Its socket URL comes from the fragment
 * (#url=...), so it never reaches a server log; filters come from the parent page by postMessage.
 */
export function LiveFrameApp() {
  const [params, setParams] = useState<FrameParams | null>(null);
  useEffect(() => setParams(readParams()), []);
  if (!params) return <FrameMessage text="Loading…" />;
  if (params.isBadUrl) return <FrameMessage text="This live view URL is not valid here." />;
  if (!params.socketUrl) return <FrameMessage text="Nothing to show: no live source was given." />;
  return (
    <LiveFrame socketUrl={params.socketUrl} namespaceId={params.namespaceId} openEventId={params.openEventId} userKey={params.userKey} />
  );
}

function FrameMessage({ text }: { text: string }) {
  return <div className="flex h-dvh items-center justify-center bg-zinc-950 text-sm text-zinc-400">{text}</div>;
}

export function LiveFrame({
  socketUrl,
  namespaceId,
  openEventId,
  userKey = null,
}: {
  socketUrl: string;
  namespaceId: string | null;
  openEventId: string | null;
  /** Whose column choice this is (a user id); null on a shared link. */
  userKey?: string | null;
}) {
  const { store, version, socketState, stats } = useLiveFrameState({ socketUrl, namespaceId });
  const [selectedId, setSelectedId] = useState<string | null>(openEventId);
  const [sort, setSort] = useState<Sort>(null);
  const [prefs, setPrefs] = useState<ColumnPrefs>(() => loadPrefs(userKey));
  const changePrefs = useCallback(
    (change: (current: ColumnPrefs) => ColumnPrefs) =>
      setPrefs((current) => {
        const next = change(current);
        savePrefs(userKey, next);
        return next;
      }),
    [userKey],
  );
  const onResize = useCallback(
    (column: ColumnId, width: number) => changePrefs((p) => ({ ...p, widths: { ...p.widths, [column]: width } })),
    [changePrefs],
  );
  const onSort = useCallback((column: ColumnId) => setSort((current) => nextSort(current, column)), []);
  const scrollRef = useRef<HTMLDivElement | null>(null);
  const isPointerHoldOff = useRef(false);

  // The rows as shown now; a sorted list of many rows is re-sorted a few times a second, not at every event.
  const filterVersion = store.filterVersion;
  const sortVersion = useThrottled(version, sort && store.shown.length > RESORT_EVERY_EVENT_UP_TO ? RESORT_MS : 0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the store mutates in place; its versions are the signal
  const liveRows = useMemo(() => displayOrder(store.shown, sort), [sortVersion, filterVersion, sort, store]);
  const { hold, isHeld, setReason, release, setHeldRows } = useHold(liveRows, store.shownAdded);
  const heldHasPending = useMemo(() => hold.rows?.some(isPendingRow) ?? false, [hold.rows]);
  // A held pending row shows its event once it comes (same id, same place): an answer moves no row.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the store mutates in place; version is the signal
  const rows = useMemo(
    () =>
      hold.rows && heldHasPending ? hold.rows.map((r) => (isPendingRow(r) ? (store.get(r.event_id) ?? r) : r)) : (hold.rows ?? liveRows),
    [hold.rows, heldHasPending, liveRows, version, store],
  );
  const newSinceHold = isHeld ? store.shownAdded - hold.baseAdded : 0;
  const isPaused = hold.user || hold.scroll;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the store mutates in place; version is the signal
  const selected = useMemo(() => (selectedId ? store.get(selectedId) : undefined), [selectedId, version, store]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: the filters change with filterVersion
  const highlight = useMemo(() => highlightTerms(store.filters), [filterVersion, store]);
  // A held list follows a change of filters or sort (the user asked for it) and stays held.
  // biome-ignore lint/correctness/useExhaustiveDependencies: refresh the held copy when the filters or the sort change
  useEffect(() => setHeldRows(() => displayOrder(store.shown, sort), store.shownAdded), [filterVersion, sort, store]);

  const onSelect = useCallback((e: TracedEvent) => setSelectedId(e.event_id), []);
  const isDetailOpen = selected !== undefined;
  useEffect(() => postToParent({ type: "detailOpen", isOpen: isDetailOpen }), [isDetailOpen]);
  // What the page shows beside the frame (how to connect a program) follows these, once the socket has said them.
  const hasEvents = store.all.length > 0;
  const isOpen = socketState === "open";
  useEffect(() => {
    if (isOpen) postToParent({ type: "stats", numPublishers: stats.numPublishers, hasEvents });
  }, [isOpen, stats.numPublishers, hasEvents]);
  const follow = useCallback(() => {
    release();
    // The pointer that clicked "new" is still over the list: it holds again only once it has left.
    isPointerHoldOff.current = true;
    scrollRef.current?.scrollTo({ top: 0 });
  }, [release]);
  const onScrollAway = useCallback((isAway: boolean) => setReason("scroll", isAway), [setReason]);
  const clear = () => {
    store.clear();
    setSelectedId(null);
    setHeldRows(() => [], store.shownAdded);
  };

  const link = useMemo(() => {
    const href = parentHref();
    if (!href || !selected) return undefined;
    const url = new URL(href);
    url.hash = "";
    url.searchParams.set("event", selected.event_id);
    return url.toString();
  }, [selected]);
  // A HAR holds exchanges: a request still waiting has none yet (its event comes when it ends).
  const inTimeOrder = () => rows.filter((e) => !isPendingRow(e)).sort((a, b) => a.time - b.time);

  // Arrow keys move the selection through the list as shown; Escape closes the detail.
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
    if (e.key === "Escape") {
      setSelectedId(null);
      return;
    }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const at = selected ? rows.indexOf(selected) : -1;
    const next = rows[e.key === "ArrowDown" ? at + 1 : at - 1];
    if (!next) return;
    setSelectedId(next.event_id);
    requestAnimationFrame(() =>
      document.querySelector(`[data-event-id="${CSS.escape(next.event_id)}"]`)?.scrollIntoView({ block: "nearest" }),
    );
  };

  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: keyboard navigation of the list as a whole
    <div className="flex h-dvh flex-col bg-zinc-950 text-zinc-100" onKeyDown={onKeyDown} tabIndex={-1}>
      <div
        data-testid="frame-toolbar"
        className="flex flex-wrap items-center gap-x-3 gap-y-1 border-b border-zinc-800 px-3 py-1.5 text-xs text-zinc-400"
      >
        <ConnectionBadge state={socketState} isPaused={isPaused} />
        <span data-testid="event-count">
          {store.shown.length.toLocaleString("en-US")} {store.shown.length === 1 ? "request" : "requests"}
          {store.shown.length !== store.all.length ? ` (of ${store.all.length.toLocaleString("en-US")})` : ""}
        </span>
        <span title="Programs publishing / people watching" className="max-sm:hidden">
          {stats.numPublishers} {stats.numPublishers === 1 ? "program" : "programs"} · {stats.numSubscribers} watching
        </span>
        {stats.notice ? (
          <span data-testid="cluster-notice" role="status" className="text-amber-400">
            {stats.notice}
          </span>
        ) : null}
        {stats.dropped > 0 ? (
          <span className="text-amber-400" title="This view fell behind and the server skipped these events for it">
            {stats.dropped.toLocaleString("en-US")} dropped
          </span>
        ) : null}
        <span className="flex-1" />
        {store.hasMessages ? (
          <button
            type="button"
            aria-pressed={!store.isHidingMessages}
            aria-label="WebSocket messages"
            onClick={() => store.setHidingMessages(!store.isHidingMessages)}
            title="Show WebSocket messages in the list, or only their connections (a connection's detail lists its messages)"
            className={`rounded-md px-2 py-0.5 hover:bg-zinc-800 ${store.isHidingMessages ? "text-zinc-500" : "text-zinc-300"}`}
          >
            <span className="sm:hidden">WS {store.isHidingMessages ? "off" : "on"}</span>
            <span className="max-sm:hidden">WS messages {store.isHidingMessages ? "off" : "on"}</span>
          </button>
        ) : null}
        <ZoneToggle className="max-sm:hidden" />
        {isPaused ? (
          <button
            type="button"
            onClick={follow}
            className="rounded-md bg-sky-500/15 px-2 py-0.5 font-medium text-sky-300 hover:bg-sky-500/25"
          >
            Paused{newSinceHold > 0 ? ` · ${newSinceHold.toLocaleString("en-US")} new` : ""} — Follow
          </button>
        ) : (
          <button type="button" onClick={() => setReason("user", true)} className="rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800">
            Pause
          </button>
        )}
        <button
          type="button"
          disabled={store.all.length === 0}
          onClick={clear}
          title="Remove every request from this list (the stored ones stay in Requests)"
          className="rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800 disabled:opacity-40"
        >
          Clear
        </button>
        <ColumnChooser prefs={prefs} onChange={changePrefs} />
        <button
          type="button"
          disabled={rows.length === 0}
          onClick={() => downloadHar(inTimeOrder(), "tapscope-requests.har")}
          aria-label="Save all as HAR"
          className="rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800 disabled:opacity-40"
        >
          <span className="sm:hidden">HAR</span>
          <span className="max-sm:hidden">Save all as HAR</span>
        </button>
      </div>
      <div className="flex min-h-0 flex-1">
        <div
          data-testid="event-list-area"
          className={`relative flex min-h-0 w-full min-w-0 flex-col ${selected ? "sm:w-[55%] sm:border-r sm:border-zinc-800" : ""}`}
          // While the pointer moves over the rows, new rows wait: the row under it stays the row it points at. A
          // pointer resting where rows later appear (a dialog closed over the list) holds nothing until it moves.
          onPointerMove={() => {
            if (!hold.pointer && !isPointerHoldOff.current && rows.length > 0) setReason("pointer", true);
          }}
          onPointerLeave={() => {
            isPointerHoldOff.current = false;
            setReason("pointer", false);
          }}
        >
          {rows.length === 0 ? (
            <EmptyState state={socketState} hasFilteredOut={store.all.length > 0} numPublishers={stats.numPublishers} />
          ) : (
            <EventList
              rows={rows}
              selectedId={selectedId}
              onSelect={onSelect}
              onScrollAway={onScrollAway}
              scrollRef={scrollRef}
              prefs={prefs}
              onResize={onResize}
              sort={sort}
              onSort={onSort}
            />
          )}
          {isHeld && newSinceHold > 0 ? (
            <button
              type="button"
              data-testid="new-rows"
              onClick={follow}
              // Over the column headings, not the rows: it never hides the row under the pointer or the top row's URL.
              className="absolute top-1 left-1/2 z-10 -translate-x-1/2 rounded-full bg-sky-500 px-3 py-0.5 text-xs font-medium text-white shadow-lg hover:bg-sky-400"
            >
              {sort ? "" : "↑ "}
              {newSinceHold.toLocaleString("en-US")} new
            </button>
          ) : null}
        </div>
        {selected ? (
          // On a phone the detail is a sheet over the whole frame (which the page makes full-screen).
          <div className="fixed inset-0 z-20 min-h-0 sm:static sm:z-auto sm:w-[45%]">
            <RequestDetail
              key={selected.event_id}
              event={selected}
              outboundCalls={store.children(selected.event_id)}
              parent={selected.parent_event_id ? store.get(selected.parent_event_id) : undefined}
              onOpen={(e) => setSelectedId(e.event_id)}
              onClose={() => setSelectedId(null)}
              onSaveHar={(e) => {
                // A WebSocket message is saved as its connection: the handshake with its messages.
                const target = (e.protocol === "ws" && store.get(e.parent_event_id)) || e;
                downloadHar([target, ...store.children(target.event_id)], `tapscope-${target.event_id}.har`);
              }}
              onSaveAllHar={() => downloadHar(inTimeOrder(), "tapscope-requests.har")}
              link={link}
              highlight={highlight}
              namespaceId={namespaceId ?? undefined}
            />
          </div>
        ) : null}
      </div>
    </div>
  );
}

const stateText: Record<SocketState, string> = {
  connecting: "Connecting…",
  open: "Live",
  reconnecting: "Reconnecting…",
  expired: "Link expired",
  closed: "Disconnected",
};

/** The socket's state; a paused list is not live to its reader even while the socket is open. */
function ConnectionBadge({ state, isPaused }: { state: SocketState; isPaused: boolean }) {
  const isLive = state === "open" && !isPaused;
  const dot = isLive ? "bg-emerald-400" : state === "open" || state === "expired" || state === "closed" ? "bg-zinc-500" : "bg-amber-400";
  return (
    <span className="flex items-center gap-1.5" data-testid="connection" data-state={state} data-paused={isPaused || undefined}>
      <span className={`size-2 rounded-full ${dot} ${isLive ? "animate-pulse" : ""}`} />
      {state === "open" && isPaused ? "Paused" : stateText[state]}
    </span>
  );
}

/** Which extra columns the list shows on a wide screen (a phone keeps the core ones and has no chooser). */
function ColumnChooser({ prefs, onChange }: { prefs: ColumnPrefs; onChange: (change: (p: ColumnPrefs) => ColumnPrefs) => void }) {
  return (
    <details className="relative max-sm:hidden">
      <summary className="cursor-pointer list-none rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800">Columns</summary>
      <fieldset className="absolute right-0 z-30 mt-1 flex w-48 flex-col gap-1 rounded-md border border-zinc-700 bg-zinc-900 p-2 shadow-xl">
        <legend className="sr-only">Columns shown</legend>
        {columnIds
          .filter((id) => !columnSpecs[id].isCore)
          .map((id) => (
            <label key={id} className="flex items-center gap-2 text-zinc-300">
              <input
                type="checkbox"
                checked={prefs.visible.includes(id)}
                onChange={(e) => {
                  const isOn = e.currentTarget.checked;
                  onChange((p) => ({
                    ...p,
                    visible: columnIds.filter((c) => (c === id ? isOn : p.visible.includes(c))),
                  }));
                }}
              />
              {columnSpecs[id].label}
            </label>
          ))}
        <button
          type="button"
          onClick={() => onChange((p) => ({ ...p, widths: {} }))}
          className="mt-1 rounded-md px-2 py-0.5 text-left text-zinc-400 hover:bg-zinc-800"
        >
          Reset widths
        </button>
      </fieldset>
    </details>
  );
}

function EmptyState({ state, hasFilteredOut, numPublishers }: { state: SocketState; hasFilteredOut: boolean; numPublishers: number }) {
  return (
    <div className="flex flex-1 flex-col items-center justify-center gap-1 p-6 text-center text-sm text-zinc-500">
      {hasFilteredOut ? (
        <p>No request matches the filters.</p>
      ) : state === "open" && numPublishers === 0 ? (
        <>
          <p>No program is connected.</p>
          <p className="text-xs">
            Start one under <code className="font-mono text-zinc-400">tapscope run</code> and the requests it serves and makes show up here.
          </p>
        </>
      ) : state === "open" ? (
        <>
          <p>Waiting for requests…</p>
          <p className="text-xs">Send a request to your program and it shows up here within a second.</p>
        </>
      ) : (
        <p>{stateText[state]}</p>
      )}
    </div>
  );
}
