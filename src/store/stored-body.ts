import type { TracedEvent } from "~/lib/protocol/event.ts";

/**
 * A text body stored once (ADR 0032, "Stored once"): when a body's search text is exactly its bytes read as UTF-8, the
 * store writes this marker in the body column instead of the bytes' base64, and gives the body back as the base64 of
 * the search text's UTF-8 when it reads the row. Base64 never holds "@", so no stored body is mistaken for it.
 */
export const textBodyMarker = "@text";

/** The body columns and the search column each is stored in when it is stored once. */
export const storedOnceColumns = [
  { body: "http_req_body", text: "search_req_body" },
  { body: "http_resp_body", text: "search_resp_body" },
] as const;

type Side = "req" | "resp";

/** The body (base64) and the search text found to be the same bytes, per side. */
type Same = { reqBody: string | null; reqText: string; respBody: string | null; respText: string };

/** Which events' bodies SearchTexts found to be their search text; the event objects it filled, as they were then. */
const sameBodies = new WeakMap<TracedEvent, Same>();

const encoder = new TextEncoder();
let scratch = new Uint8Array(4096);

/**
 * Whether a body may be stored as `text`: `text` is exactly `bytes` as UTF-8 and reads back as it was written (DuckDB's
 * client drops a byte order mark that starts a value it reads). Allocates nothing per body.
 */
export function canStoreOnce(text: string, bytes: Uint8Array): boolean {
  // UTF-8 takes at least one byte per UTF-16 code unit.
  if (text.length > bytes.length || text.length * 3 < bytes.length || text.charCodeAt(0) === 0xfeff) return false;
  if (scratch.length < bytes.length) scratch = new Uint8Array(Math.max(bytes.length, scratch.length * 2));
  const { read, written } = encoder.encodeInto(text, scratch);
  if (read !== text.length || written !== bytes.length) return false;
  return Buffer.from(scratch.buffer, 0, written).equals(bytes);
}

/**
 * Records that the event's body on `side` (its base64 as it is now) is exactly `text` as UTF-8. The store checks both
 * are still what the event holds when it writes the row, so a body or text changed afterwards is stored as it is.
 */
export function recordSameBody(e: TracedEvent, side: Side, body: string, text: string): void {
  let same = sameBodies.get(e);
  if (!same) {
    same = { reqBody: null, reqText: "", respBody: null, respText: "" };
    sameBodies.set(e, same);
  }
  if (side === "req") {
    same.reqBody = body;
    same.reqText = text;
  } else {
    same.respBody = body;
    same.respText = text;
  }
}

/** What the store writes in the event's body column on `side`: the marker for a body stored once, else its base64. */
export function storedBody(e: TracedEvent, side: Side): string {
  const body = side === "req" ? e.http_req_body : e.http_resp_body;
  if (typeof body !== "string") return String(body ?? "");
  const same = sameBodies.get(e);
  if (same) {
    const isSame =
      side === "req"
        ? same.reqBody === body && same.reqText === e.search_req_body
        : same.respBody === body && same.respText === e.search_resp_body;
    if (isSame && body !== "") return textBodyMarker;
  }
  // Not base64 and no bytes: stored as none, so it is never read back as a body stored once.
  return body === textBodyMarker ? "" : body;
}

/** A body column's value as read back: the base64 of the search text's UTF-8 for a body stored once. */
export function bodyOfStored(stored: string, searchText: unknown): string {
  if (stored !== textBodyMarker) return stored;
  return typeof searchText === "string" ? Buffer.from(searchText, "utf8").toString("base64") : "";
}
