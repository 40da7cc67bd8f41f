import { formatBytes, formatClock, formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/**
 * The `--log` line on stderr, one per request:
 *   12:04:05.123  200 GET  /users?page=2                    3.2ms
 *   12:04:05.125 →200 GET  api.example.com/v1/items        41.0ms
 *   12:04:07.001  --- GET  /hang                              2.0s  unanswered: client aborted
 * Outbound calls get an arrow and their host. Non-HTTP connections show protocol, peer and bytes.
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
  const unanswered = e.http_unanswered ? `  ${paint(31, `unanswered: ${printable(e.http_unanswered).replace("_", " ")}`, color)}` : "";
  return `${formatClock(e.time)} ${arrow}${paint(statusColor, statusText, color)} ${method} ${url.padEnd(Math.min(40, maxUrl))} ${formatDuration(e.http_duration).padStart(8)}${unanswered}${tls}`;
}
