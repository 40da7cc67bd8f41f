import { formatBytes, formatClock, formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/**
 * The `--log` line on stderr, one per request:
 *   12:04:05.123  200 GET  /users?page=2                    3.2ms
 *   12:04:05.125 →200 GET  api.example.com/v1/items        41.0ms
 *   12:04:05.126 →pg    OK  SELECT * FROM users WHERE id = $1       0.9ms
 * Outbound calls get an arrow and their host. Database calls show their system, OK or the error code, and the
 * statement. Other connections show protocol, peer and bytes.
 */
export type LogLineOptions = { color?: boolean; maxUrl?: number };

const paint = (code: number, s: string, on: boolean) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);

/** Control characters in captured text must not reach the terminal raw. */
function printable(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping terminal control characters
  return s.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function formatLogLine(e: Omit<TracedEvent, "http_req_body" | "http_resp_body">, options: LogLineOptions = {}): string {
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
  // A CONNECT's target is the authority itself (its Host header names it again).
  let url =
    e.http_req_method === "CONNECT"
      ? e.http_req_path
      : e.http_is_outgoing
        ? `${isDecrypted ? "https://" : ""}${e.http_req_host}${e.http_req_path}`
        : e.http_req_path;
  url = printable(url);
  if (url.length > maxUrl) url = `${url.slice(0, maxUrl - 1)}…`;
  const method = printable(e.http_req_method).padEnd(4);
  const tls = isDecrypted ? `  (tls, ${e.http_version === "2" ? "h2" : "h1"})` : "";
  return `${formatClock(e.time)} ${arrow}${paint(statusColor, statusText, color)} ${method} ${url.padEnd(Math.min(40, maxUrl))} ${formatDuration(e.http_duration).padStart(8)}${tls}`;
}
