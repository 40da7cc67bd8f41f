import type { TracedEvent } from "~/lib/protocol/event.ts";

/** The fields an event's URL is made of (the explorer's rows may hold only some columns). */
export type UrlFields = Partial<
  Pick<
    TracedEvent,
    | "http_req_host"
    | "http_req_path"
    | "http_req_method"
    | "tls_server_name"
    | "http_server_addr"
    | "tags"
    | "protocol"
    | "http_is_outgoing"
    | "db_statement"
  >
>;

/** An exchange read from a TLS connection the relay decrypted (the agent tags it so). */
export function isDecrypted(event: Pick<UrlFields, "tags">): boolean {
  return event.tags?.tls === "decrypted";
}

/**
 * scheme://host of the request: https only for decrypted exchanges (a server name alone does not make a plaintext
 * exchange https); the host from the Host header (or :authority), else the server name, else the server address.
 */
export function eventOrigin(event: UrlFields): string {
  const scheme = isDecrypted(event) ? "https" : "http";
  const host = event.http_req_host || event.tls_server_name || event.http_server_addr || "localhost";
  return `${scheme}://${host}`;
}

/** A CONNECT names an authority (host:port) as its target, not a path. */
function isConnect(event: UrlFields): boolean {
  return event.http_req_method === "CONNECT";
}

/** The URL of an event, everywhere one is shown or exported (request detail, cURL, HAR, `tapscope query`). */
export function eventUrl(event: UrlFields): string {
  const path = event.http_req_path ?? "";
  if (isConnect(event)) return `${isDecrypted(event) ? "https" : "http"}://${path || event.http_req_host || ""}`;
  return `${eventOrigin(event)}${path.startsWith("/") ? path : `/${path}`}`;
}

/** The URL as a user reads it in a list: the full URL of an outbound call, the path of a request the program served. */
export function displayUrl(event: UrlFields): string {
  // A database call is read by its statement, where an HTTP exchange shows its URL.
  if (event.protocol === "db") return event.db_statement || "(no statement)";
  if (event.protocol === "tcp") {
    const addr = event.http_server_addr ?? "";
    return event.tls_server_name ? `${event.tls_server_name} (${addr}, tcp)` : `${addr} (tcp)`;
  }
  if (isConnect(event)) return event.http_req_path || event.http_req_host || "";
  if (!event.http_is_outgoing) return event.http_req_path || "/";
  return eventUrl(event);
}

/**
 * A URL cut in two for a narrow line that shortens it in the middle: the head (scheme, host, the path's first
 * segments) may be cut, the tail (the path's last segment and the query, at most `maxTail` characters) stays whole, so
 * `/items` and `/slow` of one host stay apart.
 */
export function splitUrlTail(url: string, maxTail = 28): { head: string; tail: string } {
  const pathStart = url.indexOf("/", url.indexOf("://") + 3);
  if (url.indexOf("://") < 0 || pathStart < 0) return { head: url, tail: "" };
  const end = url.search(/[?#]/);
  const lastSlash = url.lastIndexOf("/", end < 0 ? url.length : end);
  const at = Math.max(lastSlash, pathStart, url.length - maxTail);
  return { head: url.slice(0, at), tail: url.slice(at) };
}

/**
 * The URL as the live list shows it: host and path, the same form for a request the program served and a call it
 * made (the scheme is left out; a decrypted exchange carries the TLS marker beside it).
 */
export function listUrl(event: UrlFields): string {
  if (event.protocol === "db" || event.protocol === "tcp" || isConnect(event)) return displayUrl(event);
  const host = event.http_req_host || event.tls_server_name || event.http_server_addr || "";
  const path = event.http_req_path || "/";
  return `${host}${path.startsWith("/") ? path : `/${path}`}`;
}
