import { eventUrl } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { asText, decodeBase64 } from "./body.ts";

/** POSIX shell single-quoting: safe for any text (a quote becomes '\''). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

// RFC 9110 token characters: anything else in a captured header name is not replayed.
export const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A client computes these itself, or they describe the old connection rather than the request.
export const CONNECTION_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "http2-settings",
]);

export type CurlCommand = { command: string; isBodyTruncated: boolean };

/**
 * A cURL command that replays the request: method, URL, headers in wire order and the body.
 * Text bodies go inline (--data-raw); binary bodies are piped in from base64 so no byte is lost to the shell.
 */
export function toCurl(event: TracedEvent): CurlCommand {
  const method = event.http_req_method || "GET";
  const body = decodeBase64(event.http_req_body);
  const hasBody = body.length > 0;
  const url = eventUrl(event);

  const first = ["curl"];
  if (method === "HEAD") first.push("--head");
  else if (method !== "GET" || hasBody) first.push("-X", shellQuote(method));
  if (/[[\]{}]/.test(url)) first.push("--globoff");
  if (event.http_version === "2" && !event.tls_server_name) first.push("--http2-prior-knowledge");
  first.push(shellQuote(url));
  const lines = [first.join(" ")];

  let wantsCompressed = false;
  for (const [name, value] of event.http_req_headers) {
    const lower = name.toLowerCase();
    if (lower === "accept-encoding" && /gzip|deflate|br|zstd/i.test(value)) wantsCompressed = true;
    // curl does not decode what it did not ask to be compressed: the captured Accept-Encoding stays behind too.
    if (!HEADER_TOKEN.test(name) || CONNECTION_HEADERS.has(lower) || lower === "accept-encoding" || /[\r\n\0]/.test(value)) continue;
    // "Name;" is curl's way to send a header with an empty value.
    lines.push(`-H ${shellQuote(value === "" ? `${name};` : `${name}: ${value}`)}`);
  }
  if (wantsCompressed) lines.push("--compressed");

  let prefix = "";
  if (hasBody) {
    const text = asText(body);
    // Without this curl would add its own form Content-Type to a body that was sent without one.
    if (!event.http_req_headers.some(([name]) => name.toLowerCase() === "content-type")) lines.push("-H 'Content-Type:'");
    if (text !== null) lines.push(`--data-raw ${shellQuote(text)}`);
    else {
      prefix = `printf '%s' ${shellQuote(event.http_req_body)} | base64 -d | `;
      lines.push("--data-binary @-");
    }
  }
  // One flag per line, continued with backslashes, as people paste them.
  return { command: prefix + lines.join(" \\\n  "), isBodyTruncated: event.http_req_body_truncated };
}
