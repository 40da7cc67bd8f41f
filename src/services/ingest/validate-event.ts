import type { TracedEvent } from "~/lib/protocol/event.ts";
import { cutText, publishLimits as L } from "~/lib/protocol/publish.ts";
import type { Result } from "~/lib/result.ts";
import { isUuid } from "~/lib/server/ids.ts";

/**
 * Published events crossed a socket from a program we do not control: every field is checked for its
 * type and cut to its size. Missing fields get their neutral value (older and newer agents stay
 * compatible); a field of the wrong type, or a missing/invalid event id or time, refuses the event.
 */
export type ValidationResult = Result<{ event: TracedEvent; truncated: number }>;

export type Kind =
  | { t: "string"; max: number }
  | { t: "int"; min: number; max: number; fallback: number }
  | { t: "bool" }
  | { t: "body"; flag: "http_req_body_truncated" | "http_resp_body_truncated" };

const str = (max: number): Kind => ({ t: "string", max });
const int = (min: number, max: number, fallback = 0): Kind => ({ t: "int", min, max, fallback });
export const MAX_MICROS = 8_640_000_000_000_000_000; // Date's range in microseconds
const MAX_BYTES = Number.MAX_SAFE_INTEGER;

/** Every field but time, event_id, protocol, headers and tags: its kind and limits. */
export const fields: Record<string, Kind> = {
  parent_event_id: str(64),
  service: str(L.maxShortChars),
  hostname: str(L.maxShortChars),
  gcp_project: str(L.maxShortChars),
  kubernetes_namespace: str(L.maxShortChars),
  gke_cluster_location: str(L.maxShortChars),
  gke_cluster_name: str(L.maxShortChars),
  gke_node_name: str(L.maxShortChars),
  process_id: int(0, 2 ** 31),
  process_executable_name: str(L.maxShortChars),
  process_executable_size: int(0, MAX_BYTES),
  process_command_line: str(L.maxCommandLineChars),
  process_user: str(L.maxShortChars),
  tls_server_name: str(L.maxShortChars),
  http_version: str(16),
  http_is_outgoing: { t: "bool" },
  http_client_addr: str(128),
  http_server_addr: str(128),
  http_duration: int(0, MAX_BYTES),
  http_req_method: str(64),
  http_req_path: str(L.maxPathChars),
  http_req_body_size_bytes_wire: int(0, MAX_BYTES),
  http_req_transfer_encoding: str(L.maxShortChars),
  http_req_content_type: str(L.maxShortChars),
  http_req_content_encoding: str(L.maxShortChars),
  http_req_content_length: int(-1, MAX_BYTES, -1),
  http_req_host: str(L.maxShortChars),
  http_req_x_forwarded_for: str(L.maxShortChars),
  http_req_body: { t: "body", flag: "http_req_body_truncated" },
  http_req_body_truncated: { t: "bool" },
  http_resp_status_code: int(0, 999),
  http_resp_body_size_bytes_wire: int(0, MAX_BYTES),
  http_resp_transfer_encoding: str(L.maxShortChars),
  http_resp_content_type: str(L.maxShortChars),
  http_resp_content_encoding: str(L.maxShortChars),
  http_resp_content_length: int(-1, MAX_BYTES, -1),
  http_resp_body: { t: "body", flag: "http_resp_body_truncated" },
  http_resp_body_truncated: { t: "bool" },
  timing_connect: int(-1, MAX_BYTES, -1),
  timing_tls: int(-1, MAX_BYTES, -1),
  timing_send: int(-1, MAX_BYTES, -1),
  timing_wait: int(-1, MAX_BYTES, -1),
  timing_receive: int(-1, MAX_BYTES, -1),
  bytes_sent: int(0, MAX_BYTES),
  bytes_received: int(0, MAX_BYTES),
};

export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const cut = cutText;

export function validateEvent(raw: unknown): ValidationResult {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, error: "event is not an object" };
  const input = raw as Record<string, unknown>;
  if (!isUuid(input.event_id)) return { ok: false, error: "event_id must be a UUID" };
  if (typeof input.time !== "number" || !Number.isFinite(input.time) || input.time <= 0 || input.time > MAX_MICROS) {
    return { ok: false, error: "time must be microseconds since the epoch" };
  }
  const protocol = input.protocol ?? "http";
  if (protocol !== "http" && protocol !== "tcp") return { ok: false, error: 'protocol must be "http" or "tcp"' };

  const out: Record<string, unknown> = { time: Math.trunc(input.time), event_id: input.event_id.toLowerCase(), protocol };
  let truncated = 0;
  const bodies: Array<[string, Extract<Kind, { t: "body" }>]> = [];
  for (const name in fields) {
    const kind = fields[name]!;
    const value = input[name];
    switch (kind.t) {
      case "string":
        if (value === undefined || value === null) out[name] = "";
        else if (typeof value !== "string") return { ok: false, error: `${name} must be a string` };
        else if (value.length > kind.max) {
          out[name] = cut(value, kind.max);
          truncated++;
        } else out[name] = value;
        break;
      case "int":
        if (value === undefined || value === null) out[name] = kind.fallback;
        else if (typeof value !== "number" || !Number.isFinite(value)) return { ok: false, error: `${name} must be a number` };
        else out[name] = Math.min(kind.max, Math.max(kind.min, Math.trunc(value)));
        break;
      case "bool":
        if (value === undefined || value === null) out[name] = false;
        else if (typeof value !== "boolean") return { ok: false, error: `${name} must be a boolean` };
        else out[name] = value;
        break;
      case "body":
        bodies.push([name, kind]);
        break;
    }
  }
  for (const [name, kind] of bodies) {
    const value = input[name];
    if (value === undefined || value === null || value === "") {
      out[name] = "";
      continue;
    }
    if (typeof value !== "string") return { ok: false, error: `${name} must be a base64 string` };
    if (value.length > L.maxBodyChars) {
      // Cut on a base64 quantum so the kept part still decodes; the flag says it was cut.
      out[name] = value.slice(0, L.maxBodyChars - (L.maxBodyChars % 4));
      out[kind.flag] = true;
      truncated++;
    } else out[name] = value;
    if (!BASE64.test(out[name] as string)) return { ok: false, error: `${name} must be base64` };
  }
  for (const name of ["http_req_headers", "http_resp_headers"] as const) {
    const headers = validateHeaders(input[name], name);
    if (!headers.ok) return headers;
    out[name] = headers.headers;
    truncated += headers.truncated;
  }
  const tags = validateTags(input.tags);
  if (!tags.ok) return tags;
  out.tags = tags.tags;
  truncated += tags.truncated;
  return { ok: true, event: out as TracedEvent, truncated };
}

function validateHeaders(value: unknown, name: string): Result<{ headers: Array<[string, string]>; truncated: number }> {
  const error = `${name} must be a list of [name, value] pairs`;
  if (value === undefined || value === null) return { ok: true, headers: [], truncated: 0 };
  if (!Array.isArray(value)) return { ok: false, error };
  let truncated = 0;
  const list = value.length > L.maxHeaderCount ? value.slice(0, L.maxHeaderCount) : value;
  if (list !== value) truncated++;
  const headers: Array<[string, string]> = [];
  for (const pair of list) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
      return { ok: false, error };
    }
    truncated += keepHeader(headers, headers.length, pair[0], pair[1]);
  }
  return { ok: true, headers, truncated };
}

function validateTags(value: unknown): Result<{ tags: Record<string, string>; truncated: number }> {
  const error = "tags must be an object of strings";
  if (value === undefined || value === null) return { ok: true, tags: {}, truncated: 0 };
  if (typeof value !== "object" || Array.isArray(value)) return { ok: false, error };
  const tags: Record<string, string> = Object.create(null);
  let truncated = 0;
  let count = 0;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== "string") return { ok: false, error };
    if (++count > L.maxTags) {
      truncated++;
      break;
    }
    truncated += keepTag(tags, k, v);
  }
  return { ok: true, tags: { ...tags }, truncated };
}

/** Sets headers[at] to one header, its name and value cut to their limits; returns how many of the two were cut. */
export function keepHeader(headers: Array<[string, string]>, at: number, name: string, value: string): number {
  const isNameCut = name.length > L.maxHeaderNameChars;
  const isValueCut = value.length > L.maxHeaderValueChars;
  headers[at] = [isNameCut ? cut(name, L.maxHeaderNameChars) : name, isValueCut ? cut(value, L.maxHeaderValueChars) : value];
  return (isNameCut ? 1 : 0) + (isValueCut ? 1 : 0);
}

/** Sets one tag, its key and value cut to their limits; returns how many of the two were cut. */
export function keepTag(tags: Record<string, string>, key: string, value: string): number {
  const kept = key.length > 128 ? cut(key, 128) : key;
  const isValueCut = value.length > L.maxTagChars;
  tags[kept] = isValueCut ? cut(value, L.maxTagChars) : value;
  return (kept !== key ? 1 : 0) + (isValueCut ? 1 : 0);
}
