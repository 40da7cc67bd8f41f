import { maxRouteChars } from "~/lib/routes/template.ts";
import { deriveEventFields, type EventOf, type FieldNames, neutralEventOf } from "./event-fields.ts";
import { publishLimits as L } from "./publish.ts";

/**
 * The kinds of event, the neutral one first; an event's kind is its `protocol` field. "db": one statement or command
 * the program sent to a database or cache (its `db_` fields say which system); "ws": one WebSocket message.
 */
export const eventKinds = ["http", "tcp", "db", "ws"] as const;

const short = { type: "text", max: L.maxShortChars } as const;
const count = { type: "int", min: 0, max: Number.MAX_SAFE_INTEGER } as const;
/** -1 when it does not apply or was not seen. */
const optional = { type: "int", min: -1, max: Number.MAX_SAFE_INTEGER, absent: -1 } as const;
/** A search column: a decoded body (at most 1 MiB of bytes, so at most as many characters) or a side's headers. */
const searchText = { type: "text", max: 3 * 1024 * 1024 } as const;
/** The longest WebSocket message text kept: the server keeps bodies of up to 1 MiB too. */
export const wsMessageChars = 1024 * 1024;
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
  { name: "event_id", type: "id", isUnique: true, ...column, filter: "id" },
  /** The inbound request that was in flight when this outbound call was made; "" when none. */
  { name: "parent_event_id", type: "text", max: 64, isUnique: true, shown: "rows", filter: "parent_id" },
  { name: "service", ...short, ...column, filter: "service" },
  { name: "hostname", ...short, ...column, filter: "hostname" },
  { name: "gcp_project", ...short, ...column, filter: "gcp.project" },
  { name: "kubernetes_namespace", ...short, ...column, filter: "kubernetes.namespace" },
  { name: "gke_cluster_location", ...short, ...column, filter: "gke.cluster_location" },
  { name: "gke_cluster_name", ...short, ...column, filter: "gke.cluster_name" },
  { name: "gke_node_name", ...short, ...column, filter: "gke.node_name" },
  { name: "process_id", type: "int", min: 0, max: 2 ** 31, ...column, filter: "process.pid" },
  { name: "process_executable_name", ...short, ...column, filter: "process.name" },
  { name: "process_executable_size", ...count, ...column, filter: "process.size" },
  { name: "process_command_line", type: "text", max: L.maxCommandLineChars, ...column, filter: "process.command_line" },
  { name: "process_user", ...short, ...column, filter: "process.user" },
  /** "http" for an HTTP exchange, "tcp" for a connection of an unknown protocol, "db" for a database call, "ws" for a WebSocket message. */
  { name: "protocol", type: "kind", values: eventKinds, ...column, filter: "protocol" },
  { name: "tls_server_name", ...short, ...column, filter: "tls.server_name" },
  /** "1.0", "1.1", "2". */
  { name: "http_version", type: "text", max: 16, ...column, filter: "http.version" },
  { name: "http_is_outgoing", type: "flag", ...column, filter: "direction" },
  /** "ip:port" ("[v6]:port"): the real client and server, as the program would see them. */
  { name: "http_client_addr", type: "text", max: 128, isUnique: true, ...column, filter: "client.address" },
  { name: "http_server_addr", type: "text", max: 128, ...column, filter: "server.address" },
  /** Microseconds from the first request byte to the last response byte. */
  { name: "http_duration", ...count, ...column, filter: "duration" },
  { name: "http_req_method", type: "text", max: 64, ...column, filter: "request.method" },
  /** Path and query, as sent on the request line (redacted). */
  { name: "http_req_path", type: "text", max: L.maxPathChars, isUnique: true, ...column, filter: "request.url" },
  { name: "http_req_body_size_bytes_wire", ...count, ...column, filter: "request.body_size" },
  { name: "http_req_transfer_encoding", ...short, ...column, filter: "request.transfer_encoding" },
  { name: "http_req_content_type", ...short, ...column, filter: "request.content_type" },
  { name: "http_req_content_encoding", ...short, ...column, filter: "request.content_encoding" },
  { name: "http_req_content_length", ...optional, ...column, filter: "request.content_length" },
  { name: "http_req_host", ...short, ...column, filter: "request.host" },
  { name: "http_req_x_forwarded_for", ...short, ...column, filter: "request.x_forwarded_for" },
  /** Header name/value pairs in wire order (redacted). */
  { name: "http_req_headers", type: "headers" },
  /** Base64 of the kept sample (decoded when the content encoding could be decoded). */
  { name: "http_req_body", type: "body", cutFlag: "http_req_body_truncated" },
  { name: "http_req_body_truncated", type: "flag", shown: "rows", filter: "request.body_truncated" },
  /** 0 when no response was seen (connection reset, program exited). */
  { name: "http_resp_status_code", type: "int", min: 0, max: 999, ...column, filter: "response.status" },
  { name: "http_resp_body_size_bytes_wire", ...count, ...column, filter: "response.body_size" },
  { name: "http_resp_transfer_encoding", ...short, ...column, filter: "response.transfer_encoding" },
  { name: "http_resp_content_type", ...short, ...column, filter: "response.content_type" },
  { name: "http_resp_content_encoding", ...short, ...column, filter: "response.content_encoding" },
  { name: "http_resp_content_length", ...optional, ...column, filter: "response.content_length" },
  { name: "http_resp_headers", type: "headers" },
  { name: "http_resp_body", type: "body", cutFlag: "http_resp_body_truncated" },
  { name: "http_resp_body_truncated", type: "flag", shown: "rows", filter: "response.body_truncated" },
  /**
   * Latency breakdown in microseconds; -1 when it does not apply.
   * Outbound: connect, send (request), wait (to first response byte), receive (response).
   * Inbound: send = request receive, wait = processing until the first response byte, receive = response send.
   */
  { name: "timing_connect", ...optional, filter: "timing.connect" },
  { name: "timing_send", ...optional, filter: "timing.send" },
  { name: "timing_wait", ...optional, filter: "timing.wait" },
  { name: "timing_receive", ...optional, filter: "timing.receive" },
  /** Bytes each way, for any connection (the only payload facts of a "tcp" event). */
  { name: "bytes_sent", ...count, filter: "bytes_sent" },
  { name: "bytes_received", ...count, filter: "bytes_received" },
  /** Free-form extra tags (an event's TLS state is read from tags.tls and tags.tls_reason). */
  { name: "tags", type: "tags", shown: "rows" },
  /** The upstream TLS handshake (outbound, decrypted, first exchange on the connection); -1 otherwise. */
  { name: "timing_tls", ...optional, filter: "timing.tls" },
  /**
   * What content search reads, made by the server when it accepts an event (src/store/search-text.ts, ADR
   * 0032) and never taken from a publisher: each body as the text a person reads (content encoding undone, charset
   * decoded, JSON strings unescaped; a binary body as its bytes, one character each, after a marker), and each side's
   * headers as `name: value` lines with lower-case names.
   */
  { name: "search_req_body", ...searchText, filter: "request.body" },
  { name: "search_resp_body", ...searchText, filter: "response.body" },
  { name: "search_req_headers", ...searchText, filter: "request.headers" },
  { name: "search_resp_headers", ...searchText, filter: "response.headers" },
  /**
   * A database call (kind "db"): one SQL statement or Redis command. Its duration is http_duration (first byte sent to
   * the end of its result), its bytes bytes_sent and bytes_received, its server http_server_addr, its timings the
   * outbound timing_ fields. "postgresql", "mysql" (MySQL and MariaDB) or "redis".
   */
  { name: "db_system", type: "text", max: 32, ...column, filter: "db.system" },
  /** The statement or command as sent (redacted; prepared statements resolved to their text), cut to the payload limit. */
  { name: "db_statement", type: "text", max: L.maxStatementChars, isUnique: true, ...column, filter: "db.statement" },
  /** The statement with its literals replaced by `?`: equal for "the same query". */
  { name: "db_statement_normalized", type: "text", max: L.maxStatementChars, ...column },
  /** SELECT, INSERT, GET, HSET...; upper case. */
  { name: "db_operation", type: "text", max: 64, ...column, filter: "db.operation" },
  /** Bound parameters in order (`$1`, `?1`), decoded to text and redacted. */
  { name: "db_parameters", type: "headers" },
  /** The database (PostgreSQL, MySQL) or index (Redis) and the user the connection logged in as. */
  { name: "db_name", ...short, ...column },
  { name: "db_user", ...short, ...column },
  /** Rows returned or affected; -1 when the server did not say. */
  { name: "db_rows", ...optional, ...column },
  /** The error when the call failed: SQLSTATE (PostgreSQL), error number (MySQL) or error prefix (Redis); "" when it did not. */
  { name: "db_error_code", type: "text", max: 64, ...column, filter: "db.error" },
  { name: "db_error_message", type: "text", max: L.maxShortChars, ...column, filter: "db.error_message" },
  /**
   * A WebSocket message (protocol "ws"; its parent is the handshake's event, the 101 or HTTP/2's CONNECT): who sent
   * it, "client" or "server" ("" on the close made up for a connection that ended without one).
   */
  { name: "ws_direction", type: "text", max: 16, ...column, filter: "ws.direction" },
  /** "text", "binary", "close", "ping" or "pong". */
  { name: "ws_opcode", type: "text", max: 16, ...column, filter: "ws.opcode" },
  /** Bytes of the message's frames on the wire, headers included. */
  { name: "ws_wire_size", ...count, ...column },
  /** The payload's size, inflated when it was compressed; -1 when a compressed message could not be inflated. */
  { name: "ws_size", ...optional, ...column },
  /** Sent compressed (permessage-deflate). */
  { name: "ws_is_compressed", type: "flag", ...column },
  /** A text message's text, a close's reason (redacted; cut to the payload limit). */
  { name: "ws_message", type: "text", max: wsMessageChars, isUnique: true, shown: "export", filter: "ws.message" },
  /** A binary message's bytes, a ping's or a pong's (cut to the payload limit). */
  { name: "ws_payload", type: "body", cutFlag: "ws_payload_truncated", shown: "export" },
  /** The message's payload (ws_message or ws_payload) was cut to the payload limit. */
  { name: "ws_payload_truncated", type: "flag", shown: "export" },
  /** A close's status code; -1 for other messages (1005: the close gave none; 1006: the connection ended without one). */
  { name: "ws_close_code", ...optional, ...column },
  /**
   * On a WebSocket's last event (its close): the messages each way, and those the per-connection budget left out
   * (counted, not recorded). Its bytes_sent and bytes_received are the frames each way, its http_duration how long it
   * was open.
   */
  { name: "ws_client_messages", ...count, shown: "export" },
  { name: "ws_server_messages", ...count, shown: "export" },
  { name: "ws_dropped", ...count, ...column },
  /**
   * The request's route, set by the server at ingest: its path with values as placeholders (`/users/{id}`), or the
   * namespace's explicit pattern it matches; "" for events of other kinds and for those stored before routes.
   */
  { name: "http_route", type: "text", max: maxRouteChars, ...column, filter: "request.route" },
  /** Why a request got no response (one of unansweredReasons); "" when it was answered. */
  { name: "http_unanswered", type: "text", max: 16, ...column, filter: "response.unanswered" },
  /** The id of the request this one sent again (Resend, ADR 0041); "" for every captured request. */
  { name: "replay_of", type: "text", max: 64, ...column, filter: "replay_of" },
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
