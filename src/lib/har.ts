import { errorMessage } from "~/lib/errors.ts";
import { eventUrl } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { isWebSocketHandshake, isWebSocketMessage, messagesByHandshake, summarizeMessages } from "~/lib/websocket-messages.ts";

/**
 * TracedEvent -> HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/). No Node-only APIs, so the
 * browser's "Save as HAR" and `tapscope query --format har` share it. Times in HAR are milliseconds.
 */
export type HarNameValue = { name: string; value: string };

export type HarCookie = {
  name: string;
  value: string;
  path?: string;
  domain?: string;
  expires?: string;
  httpOnly?: boolean;
  secure?: boolean;
};

/**
 * A WebSocket message as Chrome's DevTools exports it on its handshake's entry: "send" from the client, "receive" from
 * the server (an entry is always written from the client's side, as its request is); time in seconds since the epoch;
 * opcode 1 (text, as text) or 2 (binary, as base64).
 */
export type HarWebSocketMessage = { type: "send" | "receive"; time: number; opcode: number; data: string };

export type HarEntry = {
  startedDateTime: string;
  time: number;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    cookies: HarCookie[];
    headers: HarNameValue[];
    queryString: HarNameValue[];
    postData?: { mimeType: string; text: string; params?: HarNameValue[]; encoding?: string };
    headersSize: number;
    bodySize: number;
  };
  response: {
    status: number;
    statusText: string;
    httpVersion: string;
    cookies: HarCookie[];
    headers: HarNameValue[];
    content: { size: number; compression?: number; mimeType: string; text?: string; encoding?: string };
    redirectURL: string;
    headersSize: number;
    bodySize: number;
  };
  cache: Record<string, never>;
  timings: { blocked: number; dns: number; connect: number; send: number; wait: number; receive: number; ssl: number };
  serverIPAddress?: string;
  comment?: string;
  _eventId: string;
  _parentEventId: string;
  _isOutgoing: boolean;
  _requestBodyTruncated: boolean;
  _responseBodyTruncated: boolean;
  /** A WebSocket's handshake: "websocket", as DevTools marks it, and its messages. */
  _resourceType?: "websocket";
  _webSocketMessages?: HarWebSocketMessage[];
  /** Why the request got no response ("client_aborted", "server_closed", "reset"), as Chrome's `_error` for a failed one. */
  _unanswered?: string;
};

export type HarLog = {
  log: {
    version: "1.2";
    creator: { name: string; version: string };
    pages: [];
    entries: HarEntry[];
  };
};

const statusTexts: Record<number, string> = {
  100: "Continue",
  101: "Switching Protocols",
  103: "Early Hints",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  206: "Partial Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

const ms = (micros: number) => (micros < 0 ? -1 : Math.round(micros) / 1000);
const nonNegative = (micros: number) => (micros < 0 ? 0 : Math.round(micros) / 1000);

function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The body as text when it is text (valid UTF-8 without control bytes), else base64. */
function bodyContent(b64: string, contentType: string): { text: string; encoding?: "base64"; size: number } {
  if (!b64) return { text: "", size: 0 };
  const raw = base64ToBytes(b64);
  const isTextType = /^(text\/|application\/(json|.*\+json|xml|.*\+xml|javascript|x-www-form-urlencoded|graphql))/i.test(contentType);
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: detecting binary content
    if (isTextType || !/[\x00-\x08\x0e-\x1f]/.test(text)) return { text, size: raw.length };
  } catch {
    // Not UTF-8: binary.
  }
  return { text: b64, encoding: "base64", size: raw.length };
}

function headerList(headers: Array<[string, string]>): HarNameValue[] {
  return headers.filter(([name]) => !name.startsWith("trailer:")).map(([name, value]) => ({ name, value }));
}

function queryString(path: string): HarNameValue[] {
  const q = path.indexOf("?");
  if (q === -1) return [];
  const end = path.indexOf("#", q);
  const query = path.slice(q + 1, end === -1 ? undefined : end);
  if (!query) return [];
  return query.split("&").map((part) => {
    const eq = part.indexOf("=");
    const name = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? "" : part.slice(eq + 1);
    return { name: safeDecode(name), value: safeDecode(value) };
  });
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    return s;
  }
}

function requestCookies(headers: Array<[string, string]>): HarCookie[] {
  const out: HarCookie[] = [];
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== "cookie") continue;
    for (const pair of value.split(";")) {
      const eq = pair.indexOf("=");
      if (eq > 0) out.push({ name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim() });
    }
  }
  return out;
}

function responseCookies(headers: Array<[string, string]>): HarCookie[] {
  const out: HarCookie[] = [];
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== "set-cookie") continue;
    const [first = "", ...attrs] = value.split(";");
    const eq = first.indexOf("=");
    if (eq <= 0) continue;
    const cookie: HarCookie = { name: first.slice(0, eq).trim(), value: first.slice(eq + 1).trim() };
    for (const attr of attrs) {
      const [k = "", v = ""] = attr.split("=", 2).map((x) => x.trim());
      const key = k.toLowerCase();
      if (key === "path") cookie.path = v;
      else if (key === "domain") cookie.domain = v;
      else if (key === "expires") {
        const d = new Date(v);
        if (!Number.isNaN(d.getTime())) cookie.expires = d.toISOString();
      } else if (key === "httponly") cookie.httpOnly = true;
      else if (key === "secure") cookie.secure = true;
    }
    out.push(cookie);
  }
  return out;
}

function headerValue(headers: Array<[string, string]>, name: string): string {
  for (const [n, v] of headers) if (n.toLowerCase() === name) return v;
  return "";
}

/** "ip:port" / "[v6]:port" -> ip */
function ipOf(addr: string): string {
  if (addr.startsWith("[")) return addr.slice(1, addr.indexOf("]"));
  const colon = addr.lastIndexOf(":");
  return colon === -1 ? addr : addr.slice(0, colon);
}

/**
 * The most message data one entry carries (characters of text and base64): a connection may have thousands of
 * recorded messages, and an entry is made as one text before the HAR's own cap is checked.
 */
export const harWebSocketDataChars = 32 * 1024 * 1024;

/**
 * Data messages as DevTools exports them (its format has no control frames: a close goes in the entry's comment), up
 * to harWebSocketDataChars; `left` counts those left out past it.
 */
function harWebSocketMessages(messages: readonly TracedEvent[]): { list: HarWebSocketMessage[]; left: number } {
  const out: HarWebSocketMessage[] = [];
  let chars = 0;
  let left = 0;
  for (const m of messages) {
    if (m.ws_opcode !== "text" && m.ws_opcode !== "binary") continue;
    const data = m.ws_opcode === "text" ? m.ws_message : m.ws_payload;
    chars += data.length;
    if (chars > harWebSocketDataChars) {
      left++;
      continue;
    }
    out.push({
      type: m.ws_direction === "client" ? "send" : "receive",
      time: m.time / 1_000_000,
      opcode: m.ws_opcode === "text" ? 1 : 2,
      data,
    });
  }
  return { list: out, left };
}

/** What the entry's comment says of a WebSocket: its totals and close, and what was left out. */
function webSocketNote(messages: readonly TracedEvent[], leftOut: number): string {
  const sum = summarizeMessages(messages);
  const parts = [`WebSocket: ${sum.clientMessages} messages from the client, ${sum.serverMessages} from the server`];
  if (sum.dropped > 0) parts.push(`${sum.dropped} counted but not recorded (the message budget)`);
  if (leftOut > 0) parts.push(`the last ${leftOut} left out of this entry (over ${harWebSocketDataChars} characters of data)`);
  if (messages.some((m) => m.ws_payload_truncated)) parts.push("payloads cut to the capture limit");
  if (sum.close) parts.push(`closed ${sum.close.code}${sum.close.reason ? ` ${sum.close.reason}` : ""}`);
  if (sum.ending) parts.push(sum.ending);
  return parts.join("; ");
}

/** One event's entry; a WebSocket handshake's carries `messages` (its events of protocol "ws", time order). */
export function toHarEntry(e: TracedEvent, messages: readonly TracedEvent[] = []): HarEntry {
  const httpVersion = e.http_version ? `HTTP/${e.http_version}` : "";
  // HAR 1.2: `ssl` is also included in `connect` (for HAR 1.1 readers): connect is the TCP connect plus the handshake.
  const tlsMicros = e.timing_tls ?? -1;
  const ssl = ms(tlsMicros);
  const connect = ssl >= 0 ? ms(Math.max(0, e.timing_connect) + tlsMicros) : ms(e.timing_connect);
  const send = nonNegative(e.timing_send);
  const wait = nonNegative(e.timing_wait);
  const receive = nonNegative(e.timing_receive);
  const total = Math.max(0, connect) + send + wait + receive;
  const started = e.time / 1000 - Math.max(0, connect);
  const reqBody = bodyContent(e.http_req_body, e.http_req_content_type);
  const respBody = bodyContent(e.http_resp_body, e.http_resp_content_type);
  const isRespDecoded = Boolean(e.tags.resp_body_decoded);
  const location = headerValue(e.http_resp_headers, "location");

  const entry: HarEntry = {
    startedDateTime: new Date(started).toISOString(),
    time: Math.round(total * 1000) / 1000,
    request: {
      method: e.http_req_method,
      url: eventUrl(e),
      httpVersion,
      cookies: requestCookies(e.http_req_headers),
      headers: headerList(e.http_req_headers),
      queryString: queryString(e.http_req_path),
      headersSize: -1,
      bodySize: e.http_req_body_size_bytes_wire,
    },
    response: {
      status: e.http_resp_status_code,
      statusText: statusTexts[e.http_resp_status_code] ?? "",
      httpVersion: e.tags.http_resp_version ? `HTTP/${e.tags.http_resp_version}` : httpVersion,
      cookies: responseCookies(e.http_resp_headers),
      headers: headerList(e.http_resp_headers),
      content: {
        size: isRespDecoded && !e.http_resp_body_truncated ? respBody.size : e.http_resp_body_size_bytes_wire,
        mimeType: e.http_resp_content_type || "x-unknown",
        text: respBody.text,
        ...(respBody.encoding ? { encoding: respBody.encoding } : {}),
      },
      redirectURL: location,
      headersSize: -1,
      bodySize: e.http_resp_status_code === 0 ? -1 : e.http_resp_body_size_bytes_wire,
    },
    cache: {},
    timings: { blocked: -1, dns: -1, connect, send, wait, receive, ssl },
    _eventId: e.event_id,
    _parentEventId: e.parent_event_id,
    _isOutgoing: e.http_is_outgoing,
    _requestBodyTruncated: e.http_req_body_truncated,
    _responseBodyTruncated: e.http_resp_body_truncated,
  };
  if (isRespDecoded && !e.http_resp_body_truncated) {
    entry.response.content.compression = Math.max(0, respBody.size - e.http_resp_body_size_bytes_wire);
  }
  if (e.http_req_body || e.http_req_body_size_bytes_wire > 0) {
    entry.request.postData = {
      mimeType: e.http_req_content_type || "application/octet-stream",
      text: reqBody.text,
      ...(reqBody.encoding ? { encoding: reqBody.encoding } : {}),
    };
    if (/^application\/x-www-form-urlencoded/i.test(e.http_req_content_type) && !reqBody.encoding) {
      entry.request.postData.params = queryString(`?${reqBody.text}`);
    }
  }
  if (e.http_unanswered) entry._unanswered = e.http_unanswered;
  const ip = ipOf(e.http_server_addr);
  if (ip) entry.serverIPAddress = ip;
  const notes: string[] = [];
  if (e.http_req_body_truncated || e.http_resp_body_truncated) notes.push("body truncated to the capture limit");
  if (e.tags.incomplete) notes.push(e.tags.incomplete);
  if (isWebSocketHandshake(e)) {
    entry._resourceType = "websocket";
    const { list, left } = harWebSocketMessages(messages);
    entry._webSocketMessages = list;
    notes.push(webSocketNote(messages, left));
  }
  if (notes.length > 0) entry.comment = notes.join("; ");
  return entry;
}

/**
 * A HAR log of the HTTP events (connections of other protocols have no HAR form); WebSocket messages go on their
 * handshake's entry.
 */
export function toHarLog(events: readonly TracedEvent[], version = "0.1.0"): HarLog {
  const messages = messagesByHandshake(events);
  return {
    log: {
      version: "1.2",
      creator: { name: "tapscope", version },
      pages: [],
      entries: events
        .filter((e) => e.protocol === "http")
        .map((e) => toHarEntry(e, messages.get(e.event_id)))
        .sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime)),
    },
  };
}

/** The most events a streamed HAR fetches and writes at a time. */
export const harPageSize = 16;
/** The most captured body bytes a page may hold by its rows' sizes: pages of large bodies get fewer events. */
export const harPageBytes = 4 * 1024 * 1024;
/** The row columns harPages sizes a page by (with time and event_id). */
export const harSizeColumns = ["http_req_body_size_bytes_wire", "http_resp_body_size_bytes_wire"] as const;

/** The body bytes a stored event can hold at most, from its wire sizes: a sample is at most 1 MiB per body. */
export function storedBodyBytes(row: Record<string, unknown>): number {
  let bytes = 0;
  for (const column of harSizeColumns) bytes += Math.min(Number(row[column]) || 0, 1024 * 1024);
  return bytes;
}

/** The row columns a HAR of a query's rows reads to choose its entries (time and event_id come with every row). */
export const harRowColumns = [...harSizeColumns, "protocol", "parent_event_id", "tags"] as const;

/**
 * The entries a HAR of `rows` (oldest first, with harRowColumns) is made of: each row's event, except that a WebSocket
 * message stands for its handshake (once: the messages go on the handshake's entry). `handshakes` are the ids whose
 * messages are fetched with them (getEvent's children); `rows[i]` is the row behind `ids[i]`, for its size.
 */
export function harEntryIds(rows: ReadonlyArray<Record<string, unknown>>): {
  ids: string[];
  rows: Array<Record<string, unknown>>;
  handshakes: Set<string>;
} {
  const ids: string[] = [];
  const kept: Array<Record<string, unknown>> = [];
  const handshakes = new Set<string>();
  for (const row of rows) {
    const tags = typeof row.tags === "object" && row.tags !== null ? (row.tags as Record<string, string>) : {};
    const isMessage = isWebSocketMessage({ protocol: row.protocol as TracedEvent["protocol"] });
    const id = String(isMessage ? row.parent_event_id : row.event_id);
    if (!id || (isMessage && handshakes.has(id))) continue;
    if (isMessage || isWebSocketHandshake({ protocol: row.protocol as TracedEvent["protocol"], tags })) {
      if (handshakes.has(id)) continue;
      handshakes.add(id);
    }
    ids.push(id);
    kept.push(isMessage ? {} : row);
  }
  return { ids, rows: kept, handshakes };
}

/** Which ids a page holds and the body bytes their rows say they have. */
export type HarPageIds = { ids: string[]; bytes: number };

/**
 * `ids` (oldest first) cut into pages of what a streamed HAR reads at a time, so an export holds one page of
 * events, never the whole set. A page ends at pageSize events or when the sizes (from `sizeOf`, known before
 * fetching) reach pageBytes, so large bodies come a few at a time; an id `isAlone` says so of (a WebSocket's
 * handshake, fetched with its messages) is a page of its own.
 */
export function* harPageIds(
  ids: readonly string[],
  {
    pageSize = harPageSize,
    pageBytes = harPageBytes,
    sizeOf,
    isAlone,
  }: { pageSize?: number; pageBytes?: number; sizeOf?: (index: number) => number; isAlone?: (index: number) => boolean } = {},
): Generator<HarPageIds> {
  for (let i = 0; i < ids.length; ) {
    let end = i + 1;
    let bytes = sizeOf?.(i) ?? 0;
    while (end < ids.length && end - i < pageSize && !isAlone?.(i)) {
      const next = sizeOf?.(end) ?? 0;
      if (isAlone?.(end) || bytes + next > pageBytes) break;
      bytes += next;
      end++;
    }
    yield { ids: ids.slice(i, end), bytes };
    i = end;
  }
}

/** A fetched page's events in the order of its ids. */
export function inPageOrder(events: readonly TracedEvent[], ids: readonly string[]): TracedEvent[] {
  const order = new Map(ids.map((id, n) => [id, n]));
  return [...events].sort((a, b) => (order.get(a.event_id) ?? 0) - (order.get(b.event_id) ?? 0));
}

/** An entry to write: an HTTP event, and its messages when it is a WebSocket's handshake. */
export type HarItem = { event: TracedEvent; messages?: readonly TracedEvent[] };

/**
 * The entries a page adds to a streamed HAR, in the order they are written: its HTTP events by time, each handshake
 * with the page's messages of its WebSocket.
 */
export function inWriteOrder(events: readonly TracedEvent[]): HarItem[] {
  const messages = messagesByHandshake(events);
  return events
    .filter((e) => e.protocol === "http")
    .sort((a, b) => a.time - b.time)
    .map((event) => ({ event, messages: messages.get(event.event_id) }));
}

/**
 * An entry as a streamed HAR writes it: a comma, then its JSON (the stream leaves the comma out before the first).
 * Kept as bytes, it can be made where the conversion's time and garbage do not hold up the server (a Worker).
 */
export function harEntryText(item: HarItem, encoder: TextEncoder = new TextEncoder()): Uint8Array {
  return encoder.encode(`,${JSON.stringify(toHarEntry(item.event, item.messages))}`);
}

/**
 * The events of `ids` (oldest first), a page at a time from `fetchPage` (harPageIds), each page in the order of
 * `ids`; fetchPage is told the page's size.
 */
export async function* harPages(
  ids: readonly string[],
  fetchPage: (ids: string[], bytes: number) => Promise<readonly TracedEvent[]>,
  options: Parameters<typeof harPageIds>[1] = {},
): AsyncGenerator<readonly TracedEvent[]> {
  for (const page of harPageIds(ids, options)) {
    const events = await fetchPage(page.ids, page.bytes);
    // A handshake's page holds its messages too, which are no entries of their own.
    yield events.length > page.ids.length ? events : inPageOrder(events, page.ids);
  }
}

/** Entries already turned into text (harEntryText), in the order they are written. */
export type HarEntryTexts = { readonly texts: readonly Uint8Array[] };

export type HarStreamOptions = {
  version?: string;
  /** The most bytes the HAR may have; entries past it are left out and the log's comment says so. */
  maxBytes?: number;
  /** For the truncation message: how many requests the whole export would have had. */
  total?: number;
  /** What to tell the reader to do about a truncated HAR. */
  hint?: string;
};

/**
 * A HAR log written as it is read: the pages are pulled one at a time as the reader takes the text, so memory
 * holds one page of events and its JSON. A page is events, or their entries already as text (HarEntryTexts).
 * Past maxBytes the log ends early (still valid JSON) with a `comment` saying it was truncated, how many requests
 * it holds and why: refusing up front would need every body's size before the first byte, and a truncated
 * download still shows the oldest requests.
 */
export function harStream(
  pages: AsyncIterator<readonly TracedEvent[] | HarEntryTexts> | Iterator<readonly TracedEvent[] | HarEntryTexts>,
  options: HarStreamOptions = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const head = encoder.encode(
    `{"log":{"version":"1.2","creator":${JSON.stringify({ name: "tapscope", version: options.version ?? "0.1.0" })},"pages":[],"entries":[`,
  );
  // Room kept for the end: `]`, the comment and `}}`.
  const tailRoom = 1024;
  let written = head.length;
  let entries = 0;
  let isDone = false;
  let pending: Array<HarItem | Uint8Array> = [];
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(head);
      },
      async pull(controller) {
        if (isDone) return;
        // A pull must enqueue something: Bun's response body waits for no further pull after one that does not (the
        // download stalls until the idle timeout), so pages without HTTP entries are skipped here.
        while (pending.length === 0) {
          let next: IteratorResult<readonly TracedEvent[] | HarEntryTexts>;
          try {
            next = await pages.next();
          } catch (err) {
            // Headers are sent by now: the log still ends as JSON, saying why it is short.
            isDone = true;
            const comment = `incomplete: this HAR holds the oldest ${entries} requests; reading the rest failed: ${errorMessage(err)}`;
            controller.enqueue(encoder.encode(`],"comment":${JSON.stringify(comment)}}}\n`));
            controller.close();
            return;
          }
          if (next.done) {
            isDone = true;
            controller.enqueue(encoder.encode("]}}\n"));
            controller.close();
            return;
          }
          pending = "texts" in next.value ? [...next.value.texts] : inWriteOrder(next.value);
        }
        // One entry a pull: a page of large bodies is turned into text between other work, not in one turn.
        const item = pending.shift()!;
        const text = item instanceof Uint8Array ? item : harEntryText(item, encoder);
        const bytes = entries > 0 ? text : text.subarray(1);
        if (written + bytes.length + tailRoom > maxBytes) {
          isDone = true;
          pending = [];
          const of = options.total !== undefined ? ` of ${options.total}` : "";
          const comment = `truncated: this HAR holds the oldest ${entries}${of} requests, the most that fits in ${maxBytes} bytes${options.hint ? `; ${options.hint}` : ""}`;
          controller.enqueue(encoder.encode(`],"comment":${JSON.stringify(comment)}}}\n`));
          controller.close();
          await pages.return?.();
          return;
        }
        controller.enqueue(bytes);
        written += bytes.length;
        entries++;
      },
      async cancel() {
        isDone = true;
        await pages.return?.();
      },
    },
    // One page at a time: the next is fetched only once the reader has taken what is queued.
    { highWaterMark: 0 },
  );
}
