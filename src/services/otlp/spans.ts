import { createHash } from "node:crypto";
import { eventUrl, isDecrypted } from "~/lib/event-url.ts";
import { eventFields, type TracedEvent } from "~/lib/protocol/event.ts";
import { buildInfo } from "~/lib/server/version.ts";

/**
 * TracedEvents as OpenTelemetry spans, in the shape of opentelemetry-proto's ExportTraceServiceRequest (plain objects
 * the generated protobuf code encodes as they are, and OTLP/JSON prints with hex ids). Attribute names follow the
 * current semantic conventions (HTTP, URL, network, process, host, Kubernetes).
 *
 * Ids: an event's span id is the first 8 bytes of the SHA-256 of its event id, so its children can name it before
 * it is seen; a request that starts a trace gives it the 16 bytes of its own event id (a UUID).
 */

export type AnyValue = { stringValue: string } | { intValue: number } | { boolValue: boolean };
export type KeyValue = { key: string; value: AnyValue };

/** Where a span sits: its trace, and the span it is under (none for a trace's root). */
export type TraceContext = { traceId: Uint8Array; parentSpanId: Uint8Array | null; traceState: string };

export const SpanKind = { SERVER: 2, CLIENT: 3 } as const;
export const StatusCode = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export type Span = {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId?: Uint8Array;
  traceState?: string;
  name: string;
  kind: number;
  /** Nanoseconds since the epoch, as decimal text (beyond a double's exact range). */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  status: { code: number; message?: string };
};

/** A span with the process it came from, grouped into resourceSpans when a batch is encoded. */
/** A span with its resource; `bytes` is about what it holds in memory (the exporter's queue is bounded by it). */
export type ResourceSpan = { resourceKey: string; resource: KeyValue[]; span: Span; bytes: number };

export type ExportTraceServiceRequest = {
  resourceSpans: Array<{
    resource: { attributes: KeyValue[] };
    scopeSpans: Array<{ scope: { name: string; version: string }; spans: Span[] }>;
  }>;
};

const str = (key: string, value: string): KeyValue => ({ key, value: { stringValue: value } });
const int = (key: string, value: number): KeyValue => ({ key, value: { intValue: value } });

/** The span id of an event: its children name it as their parent before (or without) seeing it. */
export function spanIdOf(eventId: string): Uint8Array {
  const id = new Uint8Array(createHash("sha256").update(eventId).digest().subarray(0, 8));
  if (id.every((b) => b === 0)) id[7] = 1;
  return id;
}

/** The trace id a request starts when it joins none: its event id's 16 bytes (random in a v4 UUID). */
export function traceIdOf(eventId: string): Uint8Array {
  const hex = eventId.replaceAll("-", "");
  if (/^[0-9a-f]{32}$/i.test(hex) && !/^0+$/.test(hex)) return Buffer.from(hex, "hex");
  return new Uint8Array(createHash("sha256").update(eventId).digest().subarray(0, 16));
}

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A W3C `traceparent` value's trace and parent span, or null when it is not a valid one (trace context level 1). */
export function parseTraceparent(value: string): { traceId: Uint8Array; parentSpanId: Uint8Array } | null {
  const m = traceparentPattern.exec(value.trim().toLowerCase());
  if (!m) return null;
  const [, version, traceHex, parentHex, , rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff" || (version === "00" && rest !== undefined)) return null;
  if (/^0+$/.test(traceHex) || /^0+$/.test(parentHex)) return null;
  return { traceId: Buffer.from(traceHex, "hex"), parentSpanId: Buffer.from(parentHex, "hex") };
}

function header(headers: Array<[string, string]>, name: string): string | undefined {
  for (const [n, v] of headers) if (n.length === name.length && n.toLowerCase() === name) return v;
  return undefined;
}

/**
 * The trace a request carried in: its `traceparent` (and `tracestate`), else a new trace named by its own event id.
 * Inbound requests join their caller's trace this way; an outbound call without a parent request too.
 */
export function contextFromHeaders(event: Pick<TracedEvent, "event_id" | "http_req_headers">): TraceContext {
  const carried = parseTraceparent(header(event.http_req_headers, "traceparent") ?? "");
  if (!carried) return { traceId: traceIdOf(event.event_id), parentSpanId: null, traceState: "" };
  const state = header(event.http_req_headers, "tracestate") ?? "";
  return { ...carried, traceState: state.length <= 512 ? state : "" };
}

/** The context of a call made while `parent` was being served: the parent's trace, under the parent's span. */
export function childContext(parent: TraceContext, parentEventId: string): TraceContext {
  return { traceId: parent.traceId, parentSpanId: spanIdOf(parentEventId), traceState: parent.traceState };
}

/** "host:port" or "[v6]:port" as address and port (port -1 when absent). */
export function splitHostPort(value: string): { address: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(value);
  if (v6) return { address: v6[1] ?? "", port: v6[2] ? Number(v6[2]) : -1 };
  const colon = value.lastIndexOf(":");
  if (colon > 0 && value.indexOf(":") === colon && /^\d+$/.test(value.slice(colon + 1))) {
    return { address: value.slice(0, colon), port: Number(value.slice(colon + 1)) };
  }
  return { address: value, port: -1 };
}

const knownMethods = new Set(["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"]);

const micros = (us: number) => `${BigInt(Math.max(0, Math.trunc(us))) * 1000n}`;

function resourceOf(e: TracedEvent): { key: string; attributes: KeyValue[] } {
  const attributes: KeyValue[] = [str("service.name", e.service || "unknown_service")];
  if (e.hostname) attributes.push(str("host.name", e.hostname));
  if (e.process_id > 0) attributes.push(int("process.pid", e.process_id));
  if (e.process_executable_name) attributes.push(str("process.executable.name", e.process_executable_name));
  // Redacted by the capture CLI before it left the traced machine (ADR 0014).
  if (e.process_command_line) attributes.push(str("process.command_line", e.process_command_line));
  if (e.process_user) attributes.push(str("process.owner", e.process_user));
  if (e.kubernetes_namespace) attributes.push(str("k8s.namespace.name", e.kubernetes_namespace));
  if (e.gke_cluster_name) attributes.push(str("k8s.cluster.name", e.gke_cluster_name));
  if (e.gke_node_name) attributes.push(str("k8s.node.name", e.gke_node_name));
  if (e.gcp_project) {
    attributes.push(str("cloud.provider", "gcp"), str("cloud.account.id", e.gcp_project));
    if (e.gke_cluster_name) attributes.push(str("cloud.platform", "gcp_kubernetes_engine"));
  }
  if (e.gke_cluster_location) {
    attributes.push(str(/-[a-z]$/.test(e.gke_cluster_location) ? "cloud.availability_zone" : "cloud.region", e.gke_cluster_location));
  }
  const key = `${e.service}\0${e.hostname}\0${e.process_id}\0${e.process_executable_name}\0${e.process_command_line}\0${e.process_user}\0${e.kubernetes_namespace}\0${e.gke_cluster_name}\0${e.gke_node_name}\0${e.gcp_project}\0${e.gke_cluster_location}`;
  return { key, attributes };
}

function pushAddress(attributes: KeyValue[], prefix: string, value: string): void {
  if (!value) return;
  const { address, port } = splitHostPort(value);
  if (address) attributes.push(str(`${prefix}.address`, address));
  if (port >= 0) attributes.push(int(`${prefix}.port`, port));
}

/**
 * One event as a span. `link` is the event's page in Tapscope (bodies and headers stay there); `context` where it
 * sits in its trace.
 */
export function spanOf(e: TracedEvent, context: TraceContext, link: string): ResourceSpan {
  const isClient = e.http_is_outgoing;
  const attributes: KeyValue[] = [str("tapscope.event_id", e.event_id)];
  if (link) attributes.push(str("tapscope.url", link));
  let name: string;
  let status: Span["status"] = { code: StatusCode.UNSET };

  if (e.protocol === "http") {
    const method = e.http_req_method.toUpperCase();
    const isKnown = knownMethods.has(method);
    // Low cardinality, as the conventions ask: the method (a route would follow it, once routes are known).
    name = isKnown ? method : "HTTP";
    attributes.push(str("http.request.method", isKnown ? method : "_OTHER"));
    if (!isKnown) attributes.push(str("http.request.method_original", e.http_req_method));
    const path = e.http_req_path;
    const q = path.indexOf("?");
    if (isClient) attributes.push(str("url.full", eventUrl(e)));
    if (method !== "CONNECT") {
      attributes.push(str("url.path", q >= 0 ? path.slice(0, q) : path));
      if (q >= 0) attributes.push(str("url.query", path.slice(q + 1)));
    }
    attributes.push(str("url.scheme", isDecrypted(e) ? "https" : "http"));
    pushAddress(attributes, "server", e.http_req_host || (isClient ? e.tls_server_name || e.http_server_addr : e.http_server_addr));
    attributes.push(str("network.protocol.name", "http"));
    if (e.http_version) attributes.push(str("network.protocol.version", e.http_version));
    const code = e.http_resp_status_code;
    if (code > 0) attributes.push(int("http.response.status_code", code));
    if (e.http_req_body_size_bytes_wire > 0) attributes.push(int("http.request.body.size", e.http_req_body_size_bytes_wire));
    if (e.http_resp_body_size_bytes_wire > 0) attributes.push(int("http.response.body.size", e.http_resp_body_size_bytes_wire));
    const agent = header(e.http_req_headers, "user-agent");
    if (agent) attributes.push(str("user_agent.original", agent));
    if (!isClient) {
      const forwarded = e.http_req_x_forwarded_for.split(",")[0]?.trim();
      if (forwarded) attributes.push(str("client.address", forwarded));
      else pushAddress(attributes, "client", e.http_client_addr);
    }
    // Server spans fail on 5xx only (a 4xx is the client's mistake); client spans on 4xx too.
    if (code === 0) {
      status = { code: StatusCode.ERROR, message: "no response" };
      attributes.push(str("error.type", "no_response"));
    } else if (code >= 500 || (isClient && code >= 400)) {
      status = { code: StatusCode.ERROR };
      attributes.push(str("error.type", String(code)));
    }
  } else {
    name = e.tags.tls ? "tls" : "tcp";
    if (e.tls_server_name) attributes.push(str("server.address", e.tls_server_name));
    if (e.tags.tls_reason) attributes.push(str("tapscope.tls_reason", e.tags.tls_reason));
    attributes.push(int("tapscope.bytes_sent", e.bytes_sent), int("tapscope.bytes_received", e.bytes_received));
  }
  attributes.push(str("network.transport", "tcp"));
  pushAddress(attributes, "network.peer", isClient ? e.http_server_addr : e.http_client_addr);
  if (e.tls_server_name && e.protocol === "http") attributes.push(str("tls.client.server_name", e.tls_server_name));

  const span: Span = {
    traceId: context.traceId,
    spanId: spanIdOf(e.event_id),
    name,
    kind: isClient ? SpanKind.CLIENT : SpanKind.SERVER,
    startTimeUnixNano: micros(e.time),
    endTimeUnixNano: micros(e.time + Math.max(0, e.http_duration)),
    attributes,
    status,
  };
  if (context.parentSpanId) span.parentSpanId = context.parentSpanId;
  if (context.traceState) span.traceState = context.traceState;
  const resource = resourceOf(e);
  return { resourceKey: resource.key, resource: resource.attributes, span, bytes: heldBytes(resource.key, attributes) };
}

/** About the bytes a queued span keeps alive: its texts (the resource's are its key's) and a fixed cost per object. */
function heldBytes(resourceKey: string, attributes: KeyValue[]): number {
  let n = 512 + 2 * resourceKey.length;
  for (const a of attributes) n += 64 + a.key.length + ("stringValue" in a.value ? a.value.stringValue.length : 0);
  return n;
}

/** The export request for these spans: one resourceSpans entry per process, in order of first appearance. */
export function exportRequest(spans: readonly ResourceSpan[]): ExportTraceServiceRequest {
  const byResource = new Map<string, { resource: KeyValue[]; spans: Span[] }>();
  for (const s of spans) {
    let group = byResource.get(s.resourceKey);
    if (!group) {
      group = { resource: s.resource, spans: [] };
      byResource.set(s.resourceKey, group);
    }
    group.spans.push(s.span);
  }
  return {
    resourceSpans: [...byResource.values()].map((g) => ({
      resource: { attributes: g.resource },
      scopeSpans: [{ scope: { name: "tapscope", version: buildInfo.version }, spans: g.spans }],
    })),
  };
}

/** The filter language's name for an event's id, from the field table (a rename there changes the link too). */
const eventIdFilter = eventFields.byName.get("event_id")?.filter ?? "id";

/**
 * Where an event is seen in Tapscope: the requests explorer narrowed to its id by a filter chip, a minute either side
 * of it (the explorer's `filter` parameter, base64 of its state). Built by hand: it is made for every span.
 */
export function requestLink(publicUrl: string, namespaceName: string, eventId: string, timeMicros: number): string {
  const second = Math.floor(timeMicros / 1_000_000) * 1000;
  const chip = JSON.stringify(`${eventIdFilter} == ${JSON.stringify(eventId)}`);
  const state = `{"clauses":[],"text":[${chip}],"global":{"lowerMs":${second - 60_000},"upperMs":${second + 61_000}},"focus":null}`;
  const filter = Buffer.from(state).toString("base64").replaceAll("+", "%2B").replaceAll("/", "%2F").replaceAll("=", "%3D");
  return `${publicUrl}/dashboard/${encodeURIComponent(namespaceName)}/requests?filter=${filter}`;
}
