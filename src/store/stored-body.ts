import type { TracedEvent } from "~/lib/protocol/event.ts";

/**
 * A text body stored once (ADR 0032, "Stored once"): when a body's search text is exactly its bytes read as UTF-8, the
 * store writes this marker in the body column instead of the bytes' base64, and gives the body back as the base64 of
 * the search text's UTF-8 when it reads the row. Base64 never holds "@", so no stored body is mistaken for it.
 */
export const textBodyMarker = "@text";

/**
 * A side's header list stored once (ADR 0032, "Stored once"): when its search lines (content.ts, headerForm) give back
 * exactly the list, the store writes this JSON text in the header column instead of the list's JSON, and gives the list
 * back parsed from the lines when it reads the row. No header list is a JSON string, so none is mistaken for it.
 */
export const headerLinesMarker = JSON.stringify("@lines");

/**
 * A column that may be stored once: `column` holds `marker` (its text as stored) and its value is rebuilt from the
 * search column `text` on read. `group`: the columns whose search texts are read back together (bodies apart from
 * headers, so a page whose headers are stored once never reads a binary body's larger search text).
 */
export type StoredOnceColumn = {
  readonly column: string;
  readonly text: string;
  readonly side: "req" | "resp";
  readonly group: "body" | "headers";
  readonly marker: string;
  /** What the store writes in the column for the event: the marker where it is stored once. */
  readonly stored: (e: TracedEvent, side: "req" | "resp") => string;
  /** The column's value in its event shape, from its search text. */
  readonly rebuild: (searchText: unknown) => unknown;
};

const bodyOfText = (searchText: unknown) => (typeof searchText === "string" ? Buffer.from(searchText, "utf8").toString("base64") : "");
const headersOfText = (searchText: unknown) => (typeof searchText === "string" ? headersOfLines(searchText) : []);

/** The columns that may be stored once, and the search column each is stored in then. */
export const storedOnceColumns: readonly StoredOnceColumn[] = [
  {
    column: "http_req_body",
    text: "search_req_body",
    side: "req",
    group: "body",
    marker: textBodyMarker,
    stored: storedBody,
    rebuild: bodyOfText,
  },
  {
    column: "http_resp_body",
    text: "search_resp_body",
    side: "resp",
    group: "body",
    marker: textBodyMarker,
    stored: storedBody,
    rebuild: bodyOfText,
  },
  {
    column: "http_req_headers",
    text: "search_req_headers",
    side: "req",
    group: "headers",
    marker: headerLinesMarker,
    stored: storedHeaders,
    rebuild: headersOfText,
  },
  {
    column: "http_resp_headers",
    text: "search_resp_headers",
    side: "resp",
    group: "headers",
    marker: headerLinesMarker,
    stored: storedHeaders,
    rebuild: headersOfText,
  },
];

type Side = "req" | "resp";

/**
 * What SearchTexts found when it made the event's search fields, per side: the body (base64) and search text found to
 * be the same bytes, and the header list and lines it checked (whether the lines give the list back exactly).
 */
type Same = {
  reqBody: string | null;
  reqText: string;
  respBody: string | null;
  respText: string;
  reqHeaders: unknown;
  reqLines: string;
  reqIsLines: boolean;
  respHeaders: unknown;
  respLines: string;
  respIsLines: boolean;
};

/** What SearchTexts found for the events it filled (the event objects, as they were then). */
const filledAs = new WeakMap<TracedEvent, Same>();

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

/** Whether bytes start with UTF-8's byte order mark (a text decoded from them keeps it, and canStoreOnce refuses it). */
export const hasUtf8Bom = (bytes: Uint8Array): boolean => bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;

function sameOf(e: TracedEvent): Same {
  let same = filledAs.get(e);
  if (!same) {
    same = {
      reqBody: null,
      reqText: "",
      respBody: null,
      respText: "",
      reqHeaders: null,
      reqLines: "",
      reqIsLines: false,
      respHeaders: null,
      respLines: "",
      respIsLines: false,
    };
    filledAs.set(e, same);
  }
  return same;
}

/**
 * Records that the event's body on `side` (its base64 as it is now) is exactly `text` as UTF-8. The store checks both
 * are still what the event holds when it writes the row, so a body or text changed afterwards is stored as it is.
 */
export function recordSameBody(e: TracedEvent, side: Side, body: string, text: string): void {
  const same = sameOf(e);
  if (side === "req") {
    same.reqBody = body;
    same.reqText = text;
  } else {
    same.respBody = body;
    same.respText = text;
  }
}

/**
 * Records whether `lines` give back exactly the header list `headers` (what isHeaderLines would say), found while they
 * were made. The store takes it while the event holds that same list and those same lines; a list or lines replaced
 * afterwards are checked again (lists are replaced, never edited in place, once an event is accepted).
 */
export function recordHeaderLines(e: TracedEvent, side: Side, headers: unknown, lines: string, isLines: boolean): void {
  const same = sameOf(e);
  if (side === "req") {
    same.reqHeaders = headers;
    same.reqLines = lines;
    same.reqIsLines = isLines;
  } else {
    same.respHeaders = headers;
    same.respLines = lines;
    same.respIsLines = isLines;
  }
}

/** What the store writes in the event's body column on `side`: the marker for a body stored once, else its base64. */
export function storedBody(e: TracedEvent, side: Side): string {
  const body = side === "req" ? e.http_req_body : e.http_resp_body;
  if (typeof body !== "string") return String(body ?? "");
  const same = filledAs.get(e);
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

/**
 * Whether `lines` (a side's search form: `\nname: value` per header, then a line break) gives back exactly `headers`:
 * each name and value as they are, no name holding a line break or ": " (a line's name ends at its first ": "), no
 * value a line break, and text that is stored as it is (no lone surrogate). Allocates nothing; an empty list is not.
 */
export function isHeaderLines(headers: readonly unknown[], lines: string): boolean {
  if (headers.length === 0) return false;
  let at = 0;
  for (const header of headers) {
    if (!Array.isArray(header) || header.length !== 2) return false;
    const [name, value] = header as unknown[];
    if (typeof name !== "string" || typeof value !== "string") return false;
    if (lines.charCodeAt(at) !== 10 || !lines.startsWith(name, at + 1)) return false;
    at += 1 + name.length;
    if (lines.charCodeAt(at) !== 58 || lines.charCodeAt(at + 1) !== 32 || !lines.startsWith(value, at + 2)) return false;
    at += 2 + value.length;
    if (name.includes("\n") || name.includes(": ") || value.includes("\n")) return false;
  }
  return at === lines.length - 1 && lines.charCodeAt(at) === 10 && lines.isWellFormed();
}

/** A header list from its search lines (the inverse of headerForm where isHeaderLines holds). Never throws. */
export function headersOfLines(lines: string): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  let at = 0;
  while (at < lines.length - 1) {
    let end = lines.indexOf("\n", at + 1);
    if (end < 0) end = lines.length;
    const colon = lines.indexOf(": ", at + 1);
    headers.push(colon < 0 || colon > end ? [lines.slice(at + 1, end), ""] : [lines.slice(at + 1, colon), lines.slice(colon + 2, end)]);
    at = end;
  }
  return headers;
}

/** What the store writes in the event's header column on `side`: the marker for headers stored once, else their JSON. */
export function storedHeaders(e: TracedEvent, side: Side): string {
  const headers = side === "req" ? e.http_req_headers : e.http_resp_headers;
  const lines = side === "req" ? e.search_req_headers : e.search_resp_headers;
  const same = filledAs.get(e);
  let isLines: boolean;
  if (
    same &&
    (side === "req" ? same.reqHeaders === headers && same.reqLines === lines : same.respHeaders === headers && same.respLines === lines)
  ) {
    isLines = side === "req" ? same.reqIsLines : same.respIsLines;
  } else isLines = Array.isArray(headers) && typeof lines === "string" && isHeaderLines(headers, lines);
  if (isLines) return headerLinesMarker;
  const json = JSON.stringify(headers ?? null);
  return json === headerLinesMarker ? "[]" : json;
}
