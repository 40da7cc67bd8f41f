import type { CapturedEvent } from "~/lib/protocol/event.ts";

/**
 * Roughly what an event carries (its variable-length parts, written out), for batching by size. Counted as if
 * nothing were de-duplicated, so a batch also stays under the server's maxBatchExpandedChars. Tolerates values
 * of the wrong type (the encoder writes them as neutral values): nothing here may throw into `send`.
 */
export function estimateBytes(e: CapturedEvent): number {
  let bytes =
    320 +
    bodyBytes(e.http_req_body) +
    bodyBytes(e.http_resp_body) +
    chars(e.http_req_path) +
    chars(e.process_command_line) +
    chars(e.service) +
    chars(e.hostname) +
    chars(e.http_req_host) +
    chars(e.http_req_content_type) +
    chars(e.http_resp_content_type);
  for (const headers of [e.http_req_headers, e.http_resp_headers]) {
    if (!Array.isArray(headers)) continue;
    for (const pair of headers) bytes += 8 + (Array.isArray(pair) ? chars(pair[0]) + chars(pair[1]) : 0);
  }
  if (typeof e.tags === "object" && e.tags !== null) for (const key of Object.keys(e.tags)) bytes += key.length + chars(e.tags[key]);
  return bytes;
}

const chars = (value: unknown) => (typeof value === "string" ? value.length : 0);
const bodyBytes = (body: unknown) => (body instanceof Uint8Array ? body.byteLength : chars(body));
