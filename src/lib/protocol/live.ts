import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";

/**
 * Messages of the live-view WebSocket (/api/LiveSubscribe), JSON text frames, one object each.
 * The frame (/iframer) relays them to its parent page: config-applied becomes
 * markApplied, setFilterError stays setFilterError, each event becomes onEvent.
 */

/** Subscriber -> server. `filters` are the committed chips, AND-ed; the revision is echoed back. */
export type LiveClientMessage = { type: "setConfig"; revision: number; filters: string[] };

export type LiveServerMessage =
  /** First message: what this socket watches. A link's expiry is an ISO date. */
  | { type: "hello"; channel: "namespace" | "link"; expiresAt: string | null }
  /** The config with this revision is in force: every later `events` message matches it. */
  | { type: "config-applied"; revision: number }
  /**
   * The config was refused (it does not parse, or checking it against the history cost too much) and the previous one
   * stays in force. `index` is the chip, `position` 0-based within it.
   */
  | { type: "setFilterError"; revision: number; message: string; position: number; index: number }
  /**
   * The retained recent events that match the config of `revision`, oldest first (at most 1000): sent on join and
   * after each config-applied. The client replaces its list with them; `events` messages then append.
   */
  | { type: "history"; revision: number; events: TracedEvent[] }
  /** New matching events, oldest first, batched. */
  | { type: "events"; events: TracedEvent[] }
  /**
   * Requests still waiting for their answer that match the config (as far as their fields go): shown as pending until
   * the event with the same id replaces them. Not kept in the history.
   */
  | { type: "pending"; requests: PendingRequest[] }
  /**
   * Requests this viewer was shown as pending whose event does not match its config: they ended, and are not shown.
   */
  | { type: "settled"; eventIds: string[] }
  /** Publishers connected to this namespace or link, and viewers watching it; sent on join and on every change. */
  | {
      type: "stats";
      numPublishers: number;
      numSubscribers: number;
      /** Set while a cluster's live view is degraded (the broker is unreachable): what the viewer misses. */
      notice?: string;
    }
  /**
   * `count` events were skipped since the last report (`total` since joining): this subscriber fell behind, or its
   * filters could not afford them (ADR 0013).
   */
  | { type: "dropped"; count: number; total: number }
  /** The shared link expired; the server closes the socket next. */
  | { type: "expired" };

export const liveLimits = {
  maxFilters: 32,
  maxFilterLength: 4096,
} as const;

/** The live socket's path; the query carries `ticket` (namespace members) or `link_id` (link viewers). */
export const liveSubscribePath = "/api/LiveSubscribe";

/** The /link page's presence socket; the query carries `link_id`. */
export const linkPingPath = "/api/PingLink";

/**
 * The socket the live frame opens for the URL it was given (/iframer#url=...): JoinSubscriber's websocketUrl as is,
 * or, for a shared link's linkUrl (<origin>/link/<id>?expiry=...), the link's socket on the same origin.
 * Null for anything else.
 */
export function liveSocketUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol === "ws:" || parsed.protocol === "wss:") return parsed.pathname === liveSubscribePath ? parsed.toString() : null;
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
  const match = /^\/link\/([^/]+)\/?$/.exec(parsed.pathname);
  if (!match) return null;
  const socket = new URL(websocketUrl(parsed.origin, liveSubscribePath));
  socket.searchParams.set("link_id", decodeURIComponent(match[1]!));
  return socket.toString();
}

/** Validates a message that crossed the socket; null when it is not a well-formed setConfig. */
/** The close code of a viewer that read too slowly: what it held unsent went over the server's bound. */
export const slowViewerCloseCode = 4408;
/** The close code of a viewer turned away because viewers who do not read hold the live view's send budget. */
export const liveBusyCloseCode = 1013;

export function parseLiveClientMessage(raw: unknown): LiveClientMessage | null {
  let value = raw;
  if (typeof value === "string") {
    if (value.length > liveLimits.maxFilters * (liveLimits.maxFilterLength + 16) + 256) return null;
    try {
      value = JSON.parse(value);
    } catch {
      return null;
    }
  }
  if (typeof value !== "object" || value === null) return null;
  const msg = value as Record<string, unknown>;
  if (msg.type !== "setConfig") return null;
  const { revision, filters } = msg;
  if (typeof revision !== "number" || !Number.isSafeInteger(revision) || revision < 0) return null;
  if (!Array.isArray(filters) || filters.length > liveLimits.maxFilters) return null;
  if (!filters.every((f): f is string => typeof f === "string" && f.length <= liveLimits.maxFilterLength)) return null;
  return { type: "setConfig", revision, filters };
}
