import { deriveEventFields, type EventOf, type FieldNames, neutralEventOf } from "./event-fields.ts";
import { publishLimits as L } from "./publish.ts";

/** The kinds of event, the neutral one first; an event's kind is its `protocol` field. */
export const eventKinds = ["http", "tcp"] as const;

const short = { type: "text", max: L.maxShortChars } as const;
const count = { type: "int", min: 0, max: Number.MAX_SAFE_INTEGER } as const;
/** -1 when it does not apply or was not seen. */
const optional = { type: "int", min: -1, max: Number.MAX_SAFE_INTEGER, absent: -1 } as const;
/** In the explorer's clauses, the result rows and the JSON export: the product's documented event columns. */
const column = { isQueryable: true, shown: "export" } as const;

/**
 * Every field of a traced event, once: one HTTP exchange (or one non-HTTP connection), as the capture agent publishes
 * it, the server validates it, the stores keep it and the dashboard shows it. The event's type, the publish codec, the
 * validators, the stores' columns, the query columns, the explorer's clause lists and the JSON export all follow this
 * table (see FieldSpec for what each property does).
 *
 * A new field is one row, wherever it reads best: the stores' tables made before it get its column added when a server
 * opens them, filled with its neutral value (`missingColumns` in src/store/table.ts), and every insert and select names
 * its columns. Every field is on every event: one that an event's kind does not carry holds its neutral value.
 */
export const eventFieldTable = [
  /** Start of the request: microseconds since the Unix epoch. */
  { name: "time", type: "time", shown: "export" },
  { name: "event_id", type: "id", isUnique: true, ...column },
  /** The inbound request that was in flight when this outbound call was made; "" when none. */
  { name: "parent_event_id", type: "text", max: 64, isUnique: true, shown: "rows" },
  { name: "service", ...short, ...column },
  { name: "hostname", ...short, ...column },
  { name: "gcp_project", ...short, ...column },
  { name: "kubernetes_namespace", ...short, ...column },
  { name: "gke_cluster_location", ...short, ...column },
  { name: "gke_cluster_name", ...short, ...column },
  { name: "gke_node_name", ...short, ...column },
  { name: "process_id", type: "int", min: 0, max: 2 ** 31, ...column },
  { name: "process_executable_name", ...short, ...column },
  { name: "process_executable_size", ...count, ...column },
  { name: "process_command_line", type: "text", max: L.maxCommandLineChars, ...column },
  { name: "process_user", ...short, ...column },
  /** "http" for an HTTP exchange, "tcp" for a connection of an unknown protocol. */
  { name: "protocol", type: "kind", values: eventKinds, ...column },
  { name: "tls_server_name", ...short, ...column, filter: "tls.server_name" },
  /** "1.0", "1.1", "2". */
  { name: "http_version", type: "text", max: 16, ...column },
  { name: "http_is_outgoing", type: "flag", ...column },
  /** "ip:port" ("[v6]:port"): the real client and server, as the program would see them. */
  { name: "http_client_addr", type: "text", max: 128, isUnique: true, ...column },
  { name: "http_server_addr", type: "text", max: 128, ...column },
  /** Microseconds from the first request byte to the last response byte. */
  { name: "http_duration", ...count, ...column, filter: "duration" },
  { name: "http_req_method", type: "text", max: 64, ...column, filter: "request.method" },
  /** Path and query, as sent on the request line (redacted). */
  { name: "http_req_path", type: "text", max: L.maxPathChars, isUnique: true, ...column, filter: "request.url" },
  { name: "http_req_body_size_bytes_wire", ...count, ...column },
  { name: "http_req_transfer_encoding", ...short, ...column },
  { name: "http_req_content_type", ...short, ...column },
  { name: "http_req_content_encoding", ...short, ...column },
  { name: "http_req_content_length", ...optional, ...column },
  { name: "http_req_host", ...short, ...column },
  { name: "http_req_x_forwarded_for", ...short, ...column },
  /** Header name/value pairs in wire order (redacted). */
  { name: "http_req_headers", type: "headers" },
  /** Base64 of the kept sample (decoded when the content encoding could be decoded). */
  { name: "http_req_body", type: "body", cutFlag: "http_req_body_truncated" },
  { name: "http_req_body_truncated", type: "flag" },
  /** 0 when no response was seen (connection reset, program exited). */
  { name: "http_resp_status_code", type: "int", min: 0, max: 999, ...column, filter: "response.status" },
  { name: "http_resp_body_size_bytes_wire", ...count, ...column },
  { name: "http_resp_transfer_encoding", ...short, ...column },
  { name: "http_resp_content_type", ...short, ...column },
  { name: "http_resp_content_encoding", ...short, ...column },
  { name: "http_resp_content_length", ...optional, ...column },
  { name: "http_resp_headers", type: "headers" },
  { name: "http_resp_body", type: "body", cutFlag: "http_resp_body_truncated" },
  { name: "http_resp_body_truncated", type: "flag" },
  /**
   * Latency breakdown in microseconds; -1 when it does not apply.
   * Outbound: connect, send (request), wait (to first response byte), receive (response).
   * Inbound: send = request receive, wait = processing until the first response byte, receive = response send.
   */
  { name: "timing_connect", ...optional },
  { name: "timing_send", ...optional },
  { name: "timing_wait", ...optional },
  { name: "timing_receive", ...optional },
  /** Bytes each way, for any connection (the only payload facts of a "tcp" event). */
  { name: "bytes_sent", ...count },
  { name: "bytes_received", ...count },
  /** Free-form extra tags (an event's TLS state is read from tags.tls and tags.tls_reason). */
  { name: "tags", type: "tags", shown: "rows" },
  /** The upstream TLS handshake (outbound, decrypted, first exchange on the connection); -1 otherwise. */
  { name: "timing_tls", ...optional },
  /** Why a request got no response (one of unansweredReasons); "" when it was answered. */
  { name: "http_unanswered", type: "text", max: 16, ...column, filter: "response.unanswered" },
] as const;

type EventFieldTable = typeof eventFieldTable;

/**
 * How a request ended without a response: the client gave up (closed, or cancelled its HTTP/2 stream), the server
 * closed the connection (or the program exited), or the connection or stream was reset.
 */
export const unansweredReasons = ["client_aborted", "server_closed", "reset"] as const;
export type UnansweredReason = (typeof unansweredReasons)[number];

/** A traced event: one key per row of eventFieldTable. */
export type TracedEvent = EventOf<EventFieldTable>;

/** The names of the fields that match `Match`, e.g. `EventFieldName<{ type: "body" }>`. */
export type EventFieldName<Match = unknown> = FieldNames<EventFieldTable, Match>;

/** The lists every consumer derives from eventFieldTable, checked when this module loads. */
export const eventFields = deriveEventFields(eventFieldTable);

/** A fresh event whose every field is neutral: "", 0 or the field's absent value, false, empty lists. */
export const neutralEvent: () => TracedEvent = neutralEventOf<TracedEvent>(eventFields);

/**
 * What the capture agent hands its publisher: a TracedEvent whose bodies may still be raw bytes. Bodies are
 * never base64'd on the capture path (that cost lands on the traced program's machine for every request);
 * the publish codec carries them as bytes and the server turns them into TracedEvent's base64.
 */
export type CapturedEvent = Omit<TracedEvent, BodyField> & { [F in BodyField]: string | Uint8Array };
type BodyField = EventFieldName<{ type: "body" }>;

/** Base64 of a body that may still be bytes (anything else is passed on as it is: validation judges it). */
export function bodyBase64<T>(body: T | Uint8Array): T | string {
  if (!(body instanceof Uint8Array)) return body;
  return body.length === 0 ? "" : Buffer.from(body.buffer, body.byteOffset, body.length).toString("base64");
}

const bodyFields = eventFieldTable.filter((f) => f.type === "body").map((f) => f.name);

/** A captured event as the rest of the system sees it: bodies base64'd. Never throws, whatever the fields hold. */
export function toTracedEvent(e: CapturedEvent): TracedEvent {
  let out: Record<string, unknown> | null = null;
  for (const name of bodyFields) {
    const body = e[name];
    if (body instanceof Uint8Array) {
      out ??= { ...e };
      out[name] = bodyBase64(body);
    }
  }
  return (out ?? e) as TracedEvent;
}
