import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import root from "@opentelemetry/otlp-transformer/build/esm/generated/root.js";
import protobuf from "protobufjs/minimal.js";
import { errorMessage } from "~/lib/errors.ts";
import type { OtlpDestination, OtlpProtocol } from "~/lib/server/env.ts";
import { type ExportTraceServiceRequest, exportRequest, type KeyValue, type ResourceSpan, type Span } from "./spans.ts";

/**
 * OTLP/HTTP for traces (the OpenTelemetry protocol specification, "OTLP/HTTP"): a POST of an ExportTraceServiceRequest
 * as protobuf (encoded by the code opentelemetry-proto's definitions generate) or as JSON, and what the collector
 * answered, in words a person can act on.
 */

type MessageCodec = {
  encode(message: unknown): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: { longs: typeof String; bytes?: typeof String }): unknown;
};

type TraceServiceCodecs = { ExportTraceServiceRequest: MessageCodec; ExportTraceServiceResponse: MessageCodec };
const traceService = (root as unknown as { opentelemetry: { proto: { collector: { trace: { v1: TraceServiceCodecs } } } } }).opentelemetry
  .proto.collector.trace.v1;
const requestCodec = traceService.ExportTraceServiceRequest;
const responseCodec = traceService.ExportTraceServiceResponse;

const hex = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");

/** OTLP/JSON differs from protobuf's JSON mapping in one way that matters here: ids are hex, not base64. */
function jsonSpan(span: Span): unknown {
  return {
    ...span,
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    parentSpanId: span.parentSpanId ? hex(span.parentSpanId) : undefined,
    attributes: span.attributes.map(jsonAttribute),
  };
}

function jsonAttribute(kv: KeyValue): unknown {
  // int64 is a string in OTLP/JSON.
  return "intValue" in kv.value ? { key: kv.key, value: { intValue: String(kv.value.intValue) } } : kv;
}

export function encodeExportRequest(request: ExportTraceServiceRequest, protocol: OtlpProtocol): { body: Uint8Array; contentType: string } {
  if (protocol === "http/json") {
    const json = {
      resourceSpans: request.resourceSpans.map((rs) => ({
        resource: { attributes: rs.resource.attributes.map(jsonAttribute) },
        scopeSpans: rs.scopeSpans.map((ss) => ({ scope: ss.scope, spans: ss.spans.map(jsonSpan) })),
      })),
    };
    return { body: new TextEncoder().encode(JSON.stringify(json)), contentType: "application/json" };
  }
  return { body: requestCodec.encode(request).finish(), contentType: "application/x-protobuf" };
}

/** Spans encoded per event-loop turn by encodeSpans: a few milliseconds of work at most before ingest gets a turn. */
const spansPerSlice = 64;

/**
 * The export request for `spans`, encoded a slice at a time with a turn of the event loop between slices, so a large
 * batch never holds up ingest or the live view. A protobuf message's repeated field may arrive in pieces: each slice
 * is a request of its own (its own resourceSpans), and their bytes one after another are the whole request.
 */
export async function encodeSpans(
  spans: readonly ResourceSpan[],
  protocol: OtlpProtocol,
): Promise<{ body: Uint8Array; contentType: string }> {
  if (spans.length <= spansPerSlice) return encodeExportRequest(exportRequest(spans), protocol);
  const parts: Uint8Array[] = [];
  const resourceSpans: ExportTraceServiceRequest["resourceSpans"] = [];
  for (let i = 0; i < spans.length; i += spansPerSlice) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    const request = exportRequest(spans.slice(i, i + spansPerSlice));
    if (protocol === "http/json") resourceSpans.push(...request.resourceSpans);
    else parts.push(requestCodec.encode(request).finish());
  }
  if (protocol === "http/json") return encodeExportRequest({ resourceSpans }, protocol);
  return { body: Buffer.concat(parts), contentType: "application/x-protobuf" };
}

/**
 * Decodes an OTLP/HTTP protobuf request body (what a receiver does), ids as base64 and 64-bit numbers as decimal text:
 * for tests and the benchmark's stand-in collector.
 */
export function decodeExportRequest(bytes: Uint8Array): {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: Record<string, unknown> }> };
    scopeSpans?: Array<{ scope?: { name?: string }; spans?: Array<Record<string, unknown>> }>;
  }>;
} {
  return requestCodec.toObject(requestCodec.decode(bytes), { longs: String, bytes: String }) as ReturnType<typeof decodeExportRequest>;
}

/** Encodes the collector's success answer (for a stand-in collector): `rejected` spans refused with `message`. */
export function encodeExportResponse(rejected = 0, message = ""): Uint8Array {
  return responseCodec.encode(rejected > 0 ? { partialSuccess: { rejectedSpans: rejected, errorMessage: message } } : {}).finish();
}

/** What one export came to. `retryable`: worth sending again later (throttled, the collector or network away). */
export type ExportAnswer = {
  isOk: boolean;
  isRetryable: boolean;
  /** The HTTP status; null when no answer came (refused connection, timeout, a refused destination). */
  status: number | null;
  /** The collector's words (or ours), as text, at most a few hundred characters. */
  message: string;
  /** Spans a 2xx answer says it refused (partial success). */
  rejectedSpans: number;
  /** Retry-After, when a throttling answer gave one. */
  retryAfterMs?: number;
};

const maxAnswerBytes = 64 * 1024;
const maxMessageChars = 300;

/** Reads at most maxAnswerBytes of a body: a collector (or whatever answers at that address) may send anything. */
async function readBounded(res: Response): Promise<Uint8Array> {
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.length;
    if (total >= maxAnswerBytes) {
      await reader.cancel().catch(() => {});
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, maxAnswerBytes);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters from a remote answer are not shown
const controlCharacters = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Printable text only, cut short: the answer is shown in the dashboard and logs. */
function asText(text: string): string {
  const clean = text.replace(controlCharacters, "").replace(/\s+/g, " ").trim();
  return clean.length > maxMessageChars ? `${clean.slice(0, maxMessageChars - 1)}…` : clean;
}

/** google.rpc.Status's message (field 2), the body OTLP/HTTP errors carry in protobuf. */
function statusMessage(bytes: Uint8Array): string {
  try {
    const reader = protobuf.Reader.create(bytes);
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag >>> 3 === 2 && (tag & 7) === 2) return reader.string();
      reader.skipType(tag & 7);
    }
  } catch {
    // not protobuf after all
  }
  return "";
}

function answerText(bytes: Uint8Array, contentType: string): string {
  if (bytes.length === 0) return "";
  if (contentType.includes("protobuf")) return asText(statusMessage(bytes));
  const text = new TextDecoder().decode(bytes);
  if (contentType.includes("json")) {
    try {
      const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
      const message = typeof parsed.message === "string" ? parsed.message : typeof parsed.error === "string" ? parsed.error : "";
      if (message) return asText(message);
    } catch {
      // shown as text below
    }
  }
  return asText(text);
}

function partialSuccess(bytes: Uint8Array, contentType: string): { rejected: number; message: string } {
  try {
    const decoded = contentType.includes("json")
      ? (JSON.parse(new TextDecoder().decode(bytes)) as { partialSuccess?: { rejectedSpans?: unknown; errorMessage?: unknown } })
      : (responseCodec.toObject(responseCodec.decode(bytes), { longs: String }) as {
          partialSuccess?: { rejectedSpans?: unknown; errorMessage?: unknown };
        });
    const p = decoded.partialSuccess;
    const rejected = Number(p?.rejectedSpans ?? 0);
    return {
      rejected: Number.isFinite(rejected) ? rejected : 0,
      message: typeof p?.errorMessage === "string" ? asText(p.errorMessage) : "",
    };
  } catch {
    return { rejected: 0, message: "" };
  }
}

function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** The statuses OTLP/HTTP says to retry: throttled, or the collector (or a proxy before it) briefly away. */
const retryableStatuses = new Set([429, 502, 503, 504]);

/** POSTs one encoded request. Never throws; redirects are not followed (an export goes where it was told). */
export async function postExport(
  destination: Pick<OtlpDestination, "url" | "headers" | "timeoutMs">,
  encoded: { body: Uint8Array; contentType: string },
  options: { fetch?: typeof fetch } = {},
): Promise<ExportAnswer> {
  const headers = new Headers();
  for (const [name, value] of destination.headers) headers.append(name, value);
  headers.set("content-type", encoded.contentType);
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(destination.url, {
      method: "POST",
      headers,
      body: encoded.body as Uint8Array<ArrayBuffer>,
      redirect: "manual",
      signal: AbortSignal.timeout(destination.timeoutMs),
    });
  } catch (err) {
    const isTimeout = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return {
      isOk: false,
      isRetryable: true,
      status: null,
      message: isTimeout ? `no answer within ${destination.timeoutMs} ms` : `could not connect: ${asText(errorMessage(err))}`,
      rejectedSpans: 0,
    };
  }
  let bytes: Uint8Array;
  try {
    bytes = await readBounded(res);
  } catch {
    bytes = new Uint8Array();
  }
  const contentType = (res.headers.get("content-type") ?? "").toLowerCase();
  if (res.status >= 200 && res.status < 300) {
    const partial = partialSuccess(bytes, contentType);
    const message =
      partial.rejected > 0 ? `accepted; ${partial.rejected} span(s) rejected${partial.message ? `: ${partial.message}` : ""}` : "accepted";
    return { isOk: true, isRetryable: false, status: res.status, message, rejectedSpans: partial.rejected };
  }
  if (res.status >= 300 && res.status < 400) {
    return {
      isOk: false,
      isRetryable: false,
      status: res.status,
      message: "the collector redirected (redirects are not followed)",
      rejectedSpans: 0,
    };
  }
  const text = answerText(bytes, contentType);
  return {
    isOk: false,
    isRetryable: retryableStatuses.has(res.status),
    status: res.status,
    message: text || `HTTP ${res.status}`,
    rejectedSpans: 0,
    retryAfterMs: retryAfterMs(res.headers.get("retry-after")),
  };
}

const nonPublic = new BlockList();
for (const [address, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 3],
] as const) {
  nonPublic.addSubnet(address, bits, "ipv4");
}
for (const [address, bits] of [
  ["::", 127],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  nonPublic.addSubnet(address, bits, "ipv6");
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  // BlockList checks an IPv4-mapped IPv6 address against the IPv4 ranges too.
  return !nonPublic.check(address, family === 6 ? "ipv6" : "ipv4");
}

/**
 * Why a namespace's collector may not be sent to under OTLP_DESTINATIONS=public (it names or resolves to a loopback,
 * private, link-local or otherwise non-public address), or null. Checked when settings are saved and before each send.
 */
export async function destinationProblem(url: string, resolve: (host: string) => Promise<string[]> = resolveAll): Promise<string | null> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await resolve(host);
  } catch (err) {
    return `${host} does not resolve: ${asText(errorMessage(err))}`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  const inside = addresses.find((a) => !isPublicAddress(a));
  return inside ? `${host} is a private address (${inside}); this server sends spans to public addresses only` : null;
}

async function resolveAll(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((a) => a.address);
}
