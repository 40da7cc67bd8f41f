import type { ReplayOrder } from "./replay.ts";

/**
 * The publisher protocol: `tapscope run` -> POST /api/JoinPublisher (api/publish.ts) -> WebSocket to the returned
 * websocketUrl (/api/PublishEvents?ticket=...). Events go as binary frames: a binary event batch
 * (event-batch.ts, recognised by its magic; sent when the server's "ready" lists its format), or a JSON
 * `{"type":"events","seq":N,"events":[...]}` message as UTF-8 (older agents, simple clients). Pings
 * (`{"type":"ping","seq":N}`) and every server reply are JSON; `seq` is echoed in the reply. Either
 * way the server sees the size first and refuses an oversized message before reading it, and both get the
 * same validation, limits and ack. To a server whose "ready" says `pending`, requests still waiting for their answer
 * go as `{"type":"pending","seq":N,"requests":[...]}` (pending.ts): shown live, never stored, answered `noted`.
 */

export type PublishServerMessage =
  /** First message on a new socket: where the events go and the limits to respect. */
  | {
      type: "ready";
      namespaceId: string | null;
      linkId: string | null;
      maxMessageBytes: number;
      maxEventsPerMessage: number;
      /** Binary batch formats this server reads (event-batch.ts); absent on servers that read JSON only. */
      formats?: string[];
      /**
       * The server drops the events of a resent message that are already stored (by event id, across the nodes of a
       * cluster), so a publisher may send again what was unanswered when its connection was lost. Absent on older
       * servers: nothing is sent twice to them.
       */
      acceptsResent?: boolean;
      /** The server shows requests still waiting for their answer (a `pending` message); absent on older servers. */
      pending?: boolean;
    }
  /**
   * One per events message. accepted + refused + rateLimited = events in the message. `truncated` counts
   * fields cut to their size limit (marked with the truncation marker). `storeDropped` (when present) counts
   * accepted events the namespace's store could not keep (its rate limit, or writes falling behind); they still
   * went live.
   */
  | {
      type: "ack";
      seq: number;
      accepted: number;
      refused: number;
      rateLimited: number;
      truncated: number;
      errors?: string[];
      storeDropped?: number;
      /** Of `accepted`, events of a resent message that were already stored (and were not stored or shown again). */
      duplicates?: number;
    }
  | { type: "pong"; seq: number }
  /** One per `pending` message: notices shown, refused (malformed), or over the namespace's notice rate. */
  | { type: "noted"; seq: number; accepted: number; refused: number; rateLimited: number }
  /** The message was refused as a whole (too large, not JSON, wrong shape); the socket stays open. */
  | { type: "error"; seq: number | null; code: PublishErrorCode; message: string }
  /** The link expired: the server closes the socket next. */
  | { type: "expired" }
  /** Send this edited request again (only to a run that said it allows replays, ADR 0041). */
  | ReplayOrder;

export type PublishErrorCode = "too_large" | "malformed" | "too_many_events" | "unknown_type";

export const publishPath = "/api/PublishEvents";

export const publishLimits = {
  /** Bytes of one message; bigger ones are refused with an error reply. */
  maxMessageBytes: 4 * 1024 * 1024,
  maxEventsPerMessage: 1000,
  /** Characters and body bytes the events of one binary batch may carry in all (its strings are de-duplicated). */
  maxBatchExpandedChars: 16 * 1024 * 1024,
  /** Longest body field: base64 of 1 MiB (the agent keeps 64 KiB by default, decoded bodies up to 1 MiB). */
  maxBodyChars: 4 * Math.ceil((1024 * 1024) / 3),
  maxPathChars: 8192,
  /** A database call's statement (the agent cuts it to its payload limit first). */
  maxStatementChars: 16384,
  maxHeaderCount: 256,
  maxHeaderNameChars: 256,
  maxHeaderValueChars: 8192,
  maxShortChars: 1024,
  maxCommandLineChars: 4096,
  maxTags: 64,
  maxTagChars: 1024,
} as const;

/** Appended to a string cut to its limit. */
export const TRUNCATION_MARKER = "…[truncated]";

/** `value` cut to `max` characters, the marker included. */
export function cutText(value: string, max: number): string {
  return `${value.slice(0, Math.max(0, max - TRUNCATION_MARKER.length))}${TRUNCATION_MARKER}`;
}
