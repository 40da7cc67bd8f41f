import type { TracedEvent } from "~/lib/protocol/event.ts";
import { decodeBase64 } from "./body.ts";

// What the capture engine writes in place of a secret: the marker, or a hash prefix (src/agent/redact.ts).
const MARKER = /\[redacted\]|%5Bredacted%5D|sha256(?::|%3A)[0-9a-f]{16}/i;

/**
 * Where a request's copied form holds values the capture engine redacted (header names, "query", "body"): a replay
 * sends the marker, not the secret, unless the real values are put back.
 */
export function redactedPlaces(event: TracedEvent): string[] {
  const places: string[] = [];
  const seen = new Set<string>();
  for (const [name, value] of event.http_req_headers ?? []) {
    if (!MARKER.test(value) || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    places.push(name);
  }
  const path = event.http_req_path ?? "";
  const query = path.indexOf("?");
  if (query !== -1 && MARKER.test(path.slice(query))) places.push("query");
  // The marker is ASCII: looking for it in the body's bytes read as latin1 needs no decoding of the body as text.
  const body = decodeBase64(event.http_req_body ?? "");
  if (body.length > 0 && MARKER.test(new TextDecoder("latin1").decode(body))) places.push("body");
  return places;
}
