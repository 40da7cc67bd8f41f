import { neutralEvent, type TracedEvent } from "./event.ts";
import { cutText, publishLimits } from "./publish.ts";

/**
 * A request still waiting for its answer (ADR 0037): what a tracer knows of it before the exchange ends, published as
 * a light notice so the live list can show it as pending. Its fields are the event's own, under the same names; the
 * event that ends the exchange (answered, or recorded as unanswered) has the same `event_id` and replaces it.
 * Notices go to live viewers only: they are never stored.
 */
export type PendingRequest = Pick<
  TracedEvent,
  | "event_id"
  | "parent_event_id"
  | "time"
  | "service"
  | "http_version"
  | "http_req_method"
  | "http_req_host"
  | "http_req_path"
  | "http_is_outgoing"
  | "http_server_addr"
>;

export const pendingLimits = {
  /** Notices in one publish message. */
  maxPerMessage: 100,
  /** Notices a namespace or link may have shown per second (and at once), whatever its programs send. */
  perSecond: 50,
  burst: 200,
  /** A request is shown pending once it has waited this long without a response head. */
  afterMs: 1000,
  /** Notices one connection may publish (an HTTP/2 connection can hold many streams). */
  perConnection: 16,
} as const;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_MICROS = 8_640_000_000_000_000_000;

function text(value: unknown, max: number): string | null {
  if (value === undefined) return "";
  if (typeof value !== "string") return null;
  return value.length > max ? cutText(value, max) : value;
}

/** A notice that crossed a socket, checked and cut to size; null when it cannot be one. */
export function validatePendingRequest(raw: unknown): PendingRequest | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.event_id !== "string" || !uuid.test(r.event_id)) return null;
  const parent = r.parent_event_id ?? "";
  if (typeof parent !== "string" || (parent !== "" && !uuid.test(parent))) return null;
  if (typeof r.time !== "number" || !Number.isSafeInteger(r.time) || r.time <= 0 || r.time > MAX_MICROS) return null;
  if (r.http_is_outgoing !== undefined && typeof r.http_is_outgoing !== "boolean") return null;
  const short = publishLimits.maxShortChars;
  const method = text(r.http_req_method, 64);
  const path = text(r.http_req_path, publishLimits.maxPathChars);
  const host = text(r.http_req_host, short);
  const service = text(r.service, short);
  const version = text(r.http_version, 16);
  const server = text(r.http_server_addr, short);
  if (method === null || path === null || host === null || service === null || version === null || server === null) return null;
  if (method === "") return null;
  return {
    event_id: r.event_id,
    parent_event_id: parent,
    time: r.time,
    service,
    http_version: version,
    http_req_method: method,
    http_req_host: host,
    http_req_path: path,
    http_is_outgoing: r.http_is_outgoing === true,
    http_server_addr: server,
  };
}

/**
 * The notice as the event it will become, as far as it is known: every other field empty. Filters read it as such
 * (a viewer's filter on the method, URL, host or service decides as it will for the event).
 */
export function pendingEvent(request: PendingRequest): TracedEvent {
  const event = neutralEvent();
  Object.assign(event, request);
  event.protocol = "http";
  return event;
}
