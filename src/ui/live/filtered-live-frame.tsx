import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { chipReducer, initialChipState } from "../filters/chip-state.ts";
import { FilterInput } from "../filters/filter-input.tsx";
import { type FilterSuggestion, forgetSuggestion, loadSuggestions, recordUse } from "../filters/suggestions.ts";
import { type EventSummary, filterErrorText, isTrustedMessage, parseFrameMessage, type SetFiltersMessage } from "./frame-messages.ts";

export const APPLY_TIMEOUT_MS = 10_000;
export const APPLY_TIMEOUT_TEXT = "The live view did not confirm this filter. Check your connection and try again.";

/** The live frame's sandbox: modals, popups, scripts, same origin, downloads. */
export const FRAME_SANDBOX = "allow-modals allow-popups allow-scripts allow-same-origin allow-downloads";

export function iframerSrc({
  commitHash,
  socketUrl,
  namespaceId,
  eventId,
  userKey,
}: {
  commitHash: string;
  socketUrl: string;
  namespaceId?: string;
  eventId?: string | null;
  /** The signed-in user, whose choice of columns the frame keeps. */
  userKey?: string;
}): string {
  const query = new URLSearchParams({ commit: commitHash });
  if (namespaceId) query.set("namespace", namespaceId);
  if (userKey) query.set("user", userKey);
  if (eventId) query.set("event", eventId);
  return `/iframer?${query}#url=${encodeURIComponent(socketUrl)}`;
}

/**
 * A filter input driving an embedded live frame: committed chips go to the frame as setFilters and stay
 * pending until it answers markApplied or setFilterError. Used by the Live screen and the shared-link page.
 */
export function FilteredLiveFrame({
  src,
  suggestionsScope,
  onEvent,
  onStats,
  title = "Live requests",
  applyTimeoutMs = APPLY_TIMEOUT_MS,
}: {
  src: string;
  /** Whose saved suggestions these are: a namespace id, or "shared-links". */
  suggestionsScope: string;
  onEvent?: (event: EventSummary) => void;
  /** The frame's programs and whether it has requests, when they change. */
  onStats?: (stats: { numPublishers: number; hasEvents: boolean }) => void;
  title?: string;
  applyTimeoutMs?: number;
}) {
  const [state, dispatch] = useReducer(chipReducer, undefined, () => initialChipState());
  const [suggestions, setSuggestions] = useState<FilterSuggestion[]>([]);
  const [isDetailOpen, setIsDetailOpen] = useState(false);
  const frameRef = useRef<HTMLIFrameElement | null>(null);
  const stateRef = useRef(state);
  stateRef.current = state;
  const onEventRef = useRef(onEvent);
  onEventRef.current = onEvent;
  const onStatsRef = useRef(onStats);
  onStatsRef.current = onStats;

  useEffect(() => setSuggestions(loadSuggestions(suggestionsScope)), [suggestionsScope]);

  const sendFilters = useCallback(() => {
    const { revision, chips } = stateRef.current;
    if (revision === 0) return;
    const message: SetFiltersMessage = { type: "setFilters", revision, filters: chips };
    try {
      frameRef.current?.contentWindow?.postMessage(message, window.location.origin);
    } catch {
      // The frame is not (yet) our page: the next repeat or its load event sends again.
    }
  }, []);

  // Each committed change (a new revision) goes to the frame.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the revision is the trigger
  useEffect(() => {
    sendFilters();
  }, [state.revision, sendFilters]);

  // A frame still starting up may miss a message: repeat it each second until it answers, and give up
  // (rolling the change back with an error) if it never does.
  useEffect(() => {
    if (!state.isApplying) return;
    const revision = state.revision;
    const timer = setInterval(sendFilters, 1000);
    const giveUp = setTimeout(() => dispatch({ type: "filterError", revision, message: APPLY_TIMEOUT_TEXT }), applyTimeoutMs);
    return () => {
      clearInterval(timer);
      clearTimeout(giveUp);
    };
  }, [state.isApplying, state.revision, sendFilters, applyTimeoutMs]);

  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (!isTrustedMessage(event, frameRef.current?.contentWindow)) return;
      const msg = parseFrameMessage(event.data);
      if (!msg) return;
      if (msg.type === "onEvent") {
        onEventRef.current?.(msg.event);
        return;
      }
      if (msg.type === "detailOpen") {
        setIsDetailOpen(msg.isOpen);
        return;
      }
      if (msg.type === "stats") {
        onStatsRef.current?.({ numPublishers: msg.numPublishers, hasEvents: msg.hasEvents });
        return;
      }
      if (msg.type === "markApplied") {
        const current = stateRef.current;
        if (msg.revision === current.revision && current.pendingText) {
          setSuggestions(recordUse(suggestionsScope, current.pendingText));
        }
        dispatch({ type: "markApplied", revision: msg.revision });
        return;
      }
      dispatch({ type: "filterError", revision: msg.revision, message: filterErrorText(msg.message, msg.position) });
    };
    window.addEventListener("message", onMessage);
    return () => window.removeEventListener("message", onMessage);
  }, [suggestionsScope]);

  return (
    <div className="flex min-h-0 flex-1 flex-col gap-3">
      <FilterInput
        state={state}
        dispatch={dispatch}
        suggestions={suggestions}
        onForget={(text) => setSuggestions(forgetSuggestion(suggestionsScope, text))}
      />
      <iframe
        ref={frameRef}
        title={title}
        src={src}
        sandbox={FRAME_SANDBOX}
        allow="clipboard-write"
        // A frame that (re)loads after a change was sent gets the current filters again.
        onLoad={sendFilters}
        // On a phone an open request detail takes the whole screen: the frame covers the page until it closes.
        className={`min-h-[20rem] w-full flex-1 rounded-lg border border-zinc-800 bg-zinc-950 sm:min-h-[28rem] ${isDetailOpen ? "max-sm:fixed max-sm:inset-0 max-sm:z-50 max-sm:h-dvh max-sm:rounded-none max-sm:border-0" : ""}`}
      />
    </div>
  );
}
