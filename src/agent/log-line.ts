import { formatBytes, formatClock, formatDuration } from "~/lib/format.ts";
import type { EventFieldName, TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";

/**
 * The `--log` line on stderr, one per request:
 *   12:04:05.123  200 GET  /users?page=2                    3.2ms
 *   12:04:05.125 →200 GET  api.example.com/v1/items        41.0ms
 *   12:04:05.126 →pg    OK  SELECT * FROM users WHERE id = $1       0.9ms
 *   12:04:05.130  ws  c→s text 18 B {"op":"subscribe"}
 *   12:04:07.001  ··· GET  /hang                                    waiting 1.0s
 *   12:04:07.001  --- GET  /hang                                       2.00s  unanswered: client aborted
 * Outbound calls get an arrow and their host. Database calls show their system, OK or the error code, and the
 * statement. WebSocket messages show who sent them, their kind, size and the start of their text. Other connections
 * show protocol, peer and bytes. A request that has waited a second without an answer gets a line first (`···`), once.
 */
export type LogLineOptions = { color?: boolean; maxUrl?: number };

const paint = (code: number, s: string, on: boolean) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);

/** Control characters in captured text must not reach the terminal raw. */
function printable(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping terminal control characters
  return s.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

type RequestLine = Pick<TracedEvent, "http_req_method" | "http_req_host" | "http_req_path" | "http_is_outgoing">;

function requestUrl(e: RequestLine, isDecrypted: boolean, maxUrl: number): string {
  // A CONNECT's target is the authority itself (its Host header names it again).
  const url = printable(
    e.http_req_method === "CONNECT"
      ? e.http_req_path
      : e.http_is_outgoing
        ? `${isDecrypted ? "https://" : ""}${e.http_req_host}${e.http_req_path}`
        : e.http_req_path,
  );
  return url.length > maxUrl ? `${url.slice(0, maxUrl - 1)}…` : url;
}

export function formatLogLine(e: Omit<TracedEvent, EventFieldName<{ type: "body" }>>, options: LogLineOptions = {}): string {
  const color = options.color ?? false;
  const maxUrl = options.maxUrl ?? 120;
  const arrow = e.http_is_outgoing ? "→" : " ";
  if (e.protocol === "db") {
    const system = e.db_system === "postgresql" ? "pg" : e.db_system;
    const outcome = e.db_error_code ? e.db_error_code.slice(0, 9) : e.tags.incomplete || e.tags.skipped ? "---" : "OK";
    let statement = printable(e.db_statement || e.db_operation);
    if (statement.length > maxUrl) statement = `${statement.slice(0, maxUrl - 1)}…`;
    return `${formatClock(e.time)} ${arrow}${paint(2, system.padEnd(5), color)} ${paint(outcome === "OK" ? 32 : 31, outcome.padStart(3), color)} ${statement.padEnd(Math.min(40, maxUrl))} ${formatDuration(e.http_duration).padStart(8)}`;
  }
  if (e.protocol === "ws") {
    const who = e.ws_direction === "client" ? "c→s" : e.ws_direction === "server" ? "s→c" : "   ";
    const size = e.ws_size >= 0 ? formatBytes(e.ws_size) : `${formatBytes(e.ws_wire_size)} on the wire`;
    let text = e.ws_opcode === "close" ? `${e.ws_close_code} ${e.ws_message}`.trim() : e.ws_message;
    text = printable(text);
    if (text.length > maxUrl) text = `${text.slice(0, maxUrl - 1)}…`;
    const totals =
      e.ws_client_messages + e.ws_server_messages > 0
        ? `  (${e.ws_client_messages} c→s, ${e.ws_server_messages} s→c${e.ws_dropped > 0 ? `, ${e.ws_dropped} not recorded` : ""})`
        : "";
    return `${formatClock(e.time)} ${arrow}${paint(35, "ws ", color)} ${who} ${e.ws_opcode} ${size} ${text}${totals}`.trimEnd();
  }
  if (e.protocol !== "http") {
    const what = e.tags.tls ? `tls ${printable(e.tls_server_name || "")}`.trim() : e.http_version === "2" ? "h2" : "tcp";
    const peer = e.http_is_outgoing ? e.http_server_addr : e.http_client_addr;
    const why = e.tags.tls_reason ? `  (not decrypted: ${printable(e.tags.tls_reason)})` : "";
    return `${formatClock(e.time)} ${arrow}${paint(2, what.padEnd(3), color)} ${printable(peer)} ${formatBytes(e.bytes_sent)} up, ${formatBytes(e.bytes_received)} down  ${formatDuration(e.http_duration)}${why}`;
  }
  const status = e.http_resp_status_code;
  const statusText = status === 0 ? "---" : String(status);
  const statusColor = status === 0 || status >= 500 ? 31 : status >= 400 ? 33 : status >= 300 ? 36 : 32;
  const isDecrypted = e.tags.tls === "decrypted";
  const url = requestUrl(e, isDecrypted, maxUrl);
  const method = printable(e.http_req_method).padEnd(4);
  const tls = isDecrypted ? `  (tls, ${e.http_version === "2" ? "h2" : "h1"})` : "";
  const unanswered = e.http_unanswered ? `  ${paint(31, `unanswered: ${printable(e.http_unanswered).replace("_", " ")}`, color)}` : "";
  return `${formatClock(e.time)} ${arrow}${paint(statusColor, statusText, color)} ${method} ${url.padEnd(Math.min(40, maxUrl))} ${formatDuration(e.http_duration).padStart(8)}${unanswered}${tls}`;
}

/**
 * A request still waiting for its answer, once, in the request line's columns: `···` where the status goes, then the
 * time it has waited (`run --log`), or `pending` without one (`tail`: its clock is not the program's).
 */
export function formatPendingLine(p: PendingRequest, options: LogLineOptions & { waitedMicros?: number } = {}): string {
  const color = options.color ?? false;
  const maxUrl = options.maxUrl ?? 120;
  const arrow = p.http_is_outgoing ? "→" : " ";
  const url = requestUrl(p, false, maxUrl);
  const method = printable(p.http_req_method).padEnd(4);
  const waited = options.waitedMicros;
  const state = waited === undefined ? "pending" : `waiting ${(Math.max(0, waited) / 1_000_000).toFixed(1)}s`;
  return `${formatClock(p.time)} ${arrow}${paint(33, "···", color)} ${method} ${url.padEnd(Math.min(40, maxUrl))} ${paint(33, state.padStart(8), color)}`;
}
