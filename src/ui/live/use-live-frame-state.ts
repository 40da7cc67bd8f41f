import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";
import { boundedPredicate } from "~/lib/filter/evaluate.ts";
import { parseFilterChips } from "~/lib/filter/parse.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import { api } from "~/ui/lib/api.ts";
import { EventStore } from "./event-store.ts";
import { type EventSummary, type FrameMessage, isTrustedMessage, parseSetFilters } from "./frame-messages.ts";
import { LiveSocket, type SocketState } from "./live-socket.ts";

export type LiveStats = { numPublishers: number; numSubscribers: number; dropped: number; notice?: string };

/** At most this many onEvent messages per batch, so a burst cannot flood the parent page. */
const MAX_ON_EVENT_PER_BATCH = 200;

export function summarize(event: TracedEvent): EventSummary {
  return {
    eventId: event.event_id,
    time: event.time,
    method: event.http_req_method,
    path: event.http_req_path,
    status: event.http_resp_status_code,
    duration: event.http_duration,
    isOutgoing: event.http_is_outgoing,
  };
}

export function postToParent(message: FrameMessage) {
  if (window.parent === window) return;
  window.parent.postMessage(message, window.location.origin);
}

/**
 * The live frame's state: the socket, the event store, and the filter conversation with the parent page
 * (setFilters in; markApplied / setFilterError / onEvent out).
 */
export function useLiveFrameState({ socketUrl, namespaceId }: { socketUrl: string | null; namespaceId: string | null }) {
  const storeRef = useRef<EventStore | null>(null);
  if (!storeRef.current) storeRef.current = new EventStore();
  const store = storeRef.current;
  const version = useSyncExternalStore(store.subscribe, store.getVersion, store.getVersion);
  const [socketState, setSocketState] = useState<SocketState>("connecting");
  const [stats, setStats] = useState<LiveStats>({ numPublishers: 0, numSubscribers: 0, dropped: 0 });
  const [expiresAt, setExpiresAt] = useState<string | null>(null);
  const socketRef = useRef<LiveSocket | null>(null);
  // The filters in force (after the server agreed) and the latest ones asked for.
  const config = useRef<{ revision: number; filters: string[] }>({ revision: 0, filters: [] });
  const pending = useRef<{ revision: number; filters: string[] } | null>(null);

  const applyLocally = useCallback(
    (revision: number, filters: string[]) => {
      // Each event gets the step bound the server gives it, and one the server dropped for cost stays hidden here.
      store.setPredicate(filters.length > 0 ? boundedPredicate(filters) : null, filters);
      config.current = { revision, filters };
      if (pending.current?.revision === revision) pending.current = null;
      postToParent({ type: "markApplied", revision });
    },
    [store],
  );

  const onMessage = useCallback(
    (message: LiveServerMessage) => {
      switch (message.type) {
        case "hello":
          setExpiresAt(message.expiresAt);
          return;
        case "config-applied": {
          const asked = pending.current;
          if (asked && asked.revision === message.revision) applyLocally(asked.revision, asked.filters);
          return;
        }
        case "setFilterError":
          if (pending.current?.revision === message.revision) pending.current = null;
          postToParent({
            type: "setFilterError",
            revision: message.revision,
            message: message.message,
            position: message.position,
            index: message.index,
          });
          return;
        case "history":
          if (Array.isArray(message.events)) store.mergeHistory(message.events);
          return;
        case "events": {
          if (!Array.isArray(message.events)) return;
          const added = store.add(message.events);
          for (const event of added.slice(-MAX_ON_EVENT_PER_BATCH)) postToParent({ type: "onEvent", event: summarize(event) });
          return;
        }
        case "pending":
          if (Array.isArray(message.requests)) store.addPending(message.requests);
          return;
        case "settled":
          if (Array.isArray(message.eventIds)) store.settle(message.eventIds);
          return;
        case "stats":
          setStats((s) => ({ ...s, numPublishers: message.numPublishers, numSubscribers: message.numSubscribers, notice: message.notice }));
          return;
        case "dropped":
          setStats((s) => ({ ...s, dropped: message.total }));
          return;
        case "expired":
          return;
      }
    },
    [store, applyLocally],
  );

  // The socket: namespace tickets are single-use, so a reconnect asks JoinSubscriber for a fresh URL.
  useEffect(() => {
    if (!socketUrl) return;
    let currentUrl = socketUrl;
    let isFirst = true;
    const socket = new LiveSocket(
      () => {
        if (isFirst || !namespaceId) {
          isFirst = false;
          return Promise.resolve(currentUrl);
        }
        return api("JoinSubscriber", { namespaceId }).then((r) => {
          currentUrl = r.websocketUrl;
          return currentUrl;
        });
      },
      {
        onMessage,
        onState: setSocketState,
        onOpen: () => {
          const asked = pending.current ?? config.current;
          if (asked.filters.length > 0 || asked.revision > 0)
            socket.send({ type: "setConfig", revision: asked.revision, filters: asked.filters });
        },
      },
    );
    socketRef.current = socket;
    socket.start();
    return () => {
      socket.stop();
      socketRef.current = null;
    };
  }, [socketUrl, namespaceId, onMessage]);

  // setFilters from the parent page (same origin, from our parent window only).
  useEffect(() => {
    const onParentMessage = (event: MessageEvent) => {
      if (!isTrustedMessage(event, window.parent === window ? null : window.parent)) return;
      const msg = parseSetFilters(event.data);
      if (!msg) return;
      const parsed = parseFilterChips(msg.filters);
      if (!parsed.ok) {
        postToParent({ type: "setFilterError", revision: msg.revision, ...parsed.error });
        return;
      }
      pending.current = { revision: msg.revision, filters: msg.filters };
      const isSent = socketRef.current?.send({ type: "setConfig", revision: msg.revision, filters: msg.filters }) ?? false;
      // Without a live socket (reconnecting, expired link) the filter still applies to what is on screen.
      if (!isSent) applyLocally(msg.revision, msg.filters);
    };
    window.addEventListener("message", onParentMessage);
    return () => window.removeEventListener("message", onParentMessage);
  }, [applyLocally]);

  return { store, version, socketState, stats, expiresAt };
}
