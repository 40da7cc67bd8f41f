import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { highlightTerms } from "~/lib/filter/search.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { ZoneToggle } from "~/ui/components/zone-toggle.tsx";
import { downloadHar } from "../request-detail/har-download.ts";
import { RequestDetail } from "../request-detail/request-detail.tsx";
import { EventList } from "./event-list.tsx";
import { liveSocketUrlFromFragment } from "./frame-url.ts";
import type { SocketState } from "./live-socket.ts";
import { postToParent, useLiveFrameState } from "./use-live-frame-state.ts";

type FrameParams = { socketUrl: string | null; namespaceId: string | null; openEventId: string | null; isBadUrl: boolean };

function readParams(): FrameParams {
  const search = new URLSearchParams(window.location.search);
  const hasUrl = new URLSearchParams(window.location.hash.replace(/^#/, "")).has("url");
  const socketUrl = liveSocketUrlFromFragment(window.location.hash, window.location);
  return { socketUrl, namespaceId: search.get("namespace"), openEventId: search.get("event"), isBadUrl: hasUrl && !socketUrl };
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
  return <LiveFrame socketUrl={params.socketUrl} namespaceId={params.namespaceId} openEventId={params.openEventId} />;
}

function FrameMessage({ text }: { text: string }) {
  return <div className="flex h-dvh items-center justify-center bg-zinc-950 text-sm text-zinc-400">{text}</div>;
}

export function LiveFrame({
  socketUrl,
  namespaceId,
  openEventId,
}: {
  socketUrl: string;
  namespaceId: string | null;
  openEventId: string | null;
}) {
  const { store, version, socketState, stats } = useLiveFrameState({ socketUrl, namespaceId });
  const [selectedId, setSelectedId] = useState<string | null>(openEventId);
  const [pause, setPause] = useState<{ reason: "user" | "scroll"; frozen: TracedEvent[]; baseAdded: number } | null>(null);
  const scrollRef = useRef<HTMLDivElement | null>(null);

  // While paused the list is a frozen copy; a filter change refreshes the copy.
  const shown = pause ? pause.frozen : store.shown;
  const newSincePause = pause ? store.shownAdded - pause.baseAdded : 0;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the store mutates in place; version is the signal
  const selected = useMemo(() => (selectedId ? store.get(selectedId) : undefined), [selectedId, version, store]);

  const filterVersion = store.filterVersion;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the filters change with filterVersion
  const highlight = useMemo(() => highlightTerms(store.filters), [filterVersion, store]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: refresh the frozen copy when the filters change
  useEffect(() => {
    setPause((current) => (current ? { ...current, frozen: store.shown.slice(), baseAdded: store.shownAdded } : current));
  }, [filterVersion, store]);

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
    setPause(null);
    scrollRef.current?.scrollTo({ top: 0 });
  }, []);
  const onScrollAway = useCallback(
    (isAway: boolean) => {
      setPause((current) => {
        if (isAway && !current) return { reason: "scroll", frozen: store.shown.slice(), baseAdded: store.shownAdded };
        if (!isAway && current?.reason === "scroll") return null;
        return current;
      });
    },
    [store],
  );

  const link = useMemo(() => {
    const href = parentHref();
    if (!href || !selected) return undefined;
    const url = new URL(href);
    url.hash = "";
    url.searchParams.set("event", selected.event_id);
    return url.toString();
  }, [selected]);

  // Arrow keys move the selection through the list as shown (newest first); Escape closes the detail.
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
    if (e.key === "Escape") {
      setSelectedId(null);
      return;
    }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const at = selected ? shown.lastIndexOf(selected) : shown.length;
    const next = shown[e.key === "ArrowDown" ? at - 1 : at + 1];
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
        <ConnectionBadge state={socketState} />
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
        {pause ? (
          <button
            type="button"
            onClick={follow}
            className="rounded-md bg-sky-500/15 px-2 py-0.5 font-medium text-sky-300 hover:bg-sky-500/25"
          >
            Paused{newSincePause > 0 ? ` · ${newSincePause.toLocaleString("en-US")} new` : ""} — Follow
          </button>
        ) : (
          <button
            type="button"
            onClick={() => setPause({ reason: "user", frozen: store.shown.slice(), baseAdded: store.shownAdded })}
            className="rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800"
          >
            Pause
          </button>
        )}
        <button
          type="button"
          disabled={shown.length === 0}
          onClick={() => downloadHar(shown, "tapscope-requests.har")}
          aria-label="Save all as HAR"
          className="rounded-md px-2 py-0.5 text-zinc-300 hover:bg-zinc-800 disabled:opacity-40"
        >
          <span className="sm:hidden">HAR</span>
          <span className="max-sm:hidden">Save all as HAR</span>
        </button>
      </div>
      <div className="flex min-h-0 flex-1">
        <div className={`flex min-h-0 w-full min-w-0 flex-col ${selected ? "sm:w-[55%] sm:border-r sm:border-zinc-800" : ""}`}>
          {shown.length === 0 ? (
            <EmptyState state={socketState} hasFilteredOut={store.all.length > 0} numPublishers={stats.numPublishers} />
          ) : (
            <EventList
              events={shown}
              version={pause ? 0 : version}
              selectedId={selectedId}
              onSelect={onSelect}
              onScrollAway={onScrollAway}
              scrollRef={scrollRef}
            />
          )}
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
              onSaveAllHar={() => downloadHar(shown, "tapscope-requests.har")}
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

function ConnectionBadge({ state }: { state: SocketState }) {
  const dot = state === "open" ? "bg-emerald-400" : state === "expired" || state === "closed" ? "bg-zinc-500" : "bg-amber-400";
  return (
    <span className="flex items-center gap-1.5" data-testid="connection" data-state={state}>
      <span className={`size-2 rounded-full ${dot} ${state === "open" ? "animate-pulse" : ""}`} />
      {stateText[state]}
    </span>
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
