import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { EndpointsQuery, HistogramQuery, QuantileMethod, RowsQuery, TimestampFilter } from "~/lib/protocol/query.ts";
import { timeRangeProblem } from "~/lib/time/bounds.ts";

/**
 * Query tunnels: binary messages on a WebSocket, shared by the CLI, the server, the
 * self-hosted worker and the browser explorer. Browser-safe: gzip through CompressionStream.
 *
 * Frame: "TS" magic, version byte, kind byte (1 request, 2 result, 3 part of a split result), u32 header length (big endian),
 * header JSON (UTF-8), then the payload bytes. A request's payload is the JSON of what is wanted
 * (compressed per header.bodyCompression); a result's payload is the result data (per header.compression),
 * which decodes to JSON {meta, data, rows_before_limit_at_least, ...}.
 */

export const tunnelPath = "/api/Tunnel";
export const workerPath = "/api/WorkerConnect";

export const compressionModes = ["none", "gzip"] as const;
export type Compression = (typeof compressionModes)[number];

export type { TunnelRole } from "./api/tunnel.ts";

/** Queries are query objects, never SQL; filterText is filter-language text parsed by the worker. */
export type TunnelWant =
  | { kind: "rows"; query: Omit<RowsQuery, "expressions">; filterText?: string }
  | {
      kind: "histogram";
      query: Omit<HistogramQuery, "expressions">;
      filterText?: string;
    }
  /** The Endpoints table (EndpointsQuery): one data row per endpoint. */
  | { kind: "endpoints"; query: Omit<EndpointsQuery, "expressions">; filterText?: string }
  | { kind: "event"; eventId: string }
  /** Full events (headers, bodies, timings) of up to maxEventsPerRequest ids: what a HAR export needs. */
  | { kind: "events"; eventIds: string[]; range?: TimestampFilter }
  /** Role INSERT only: events for the tunnel's namespace. */
  | { kind: "insert"; events: TracedEvent[] };

export const maxEventsPerRequest = 500;

export type TunnelRequest = {
  queryId: string;
  /** The org or namespace the request is for; the tunnel's own namespace always wins on the server. */
  tags: { namespaceId?: string; orgId?: string };
  /** How the result's data should be compressed. */
  compression: Compression;
  want: TunnelWant;
};

export type TunnelResult = {
  queryId: string;
  tunnelError: string | null;
  databaseQueryId: string | null;
  databaseError: string | null;
  compression: Compression;
  /** The (compressed) result data; empty when there is an error. */
  data: Uint8Array;
};

/** Decoded result data. meta names the columns of data's rows (event column names). */
export type TunnelResultData = {
  meta: string[];
  data: Record<string, unknown>[];
  rows_before_limit_at_least: number;
  wasRowLimitExceeded: boolean;
  actualNumberOfRows: number;
  durationInNanoseconds: number;
  /** Histogram results: the bucket grid (data rows are the buckets). */
  bucketMs?: number;
  startMs?: number;
  total?: number;
  /** Event detail: the outbound calls of data[0]. */
  children?: TracedEvent[];
  /** Endpoints: how the percentiles were computed, and the sparklines' grid. */
  quantiles?: QuantileMethod;
  sparklineStartMs?: number;
  sparklineStepMs?: number;
};

export class TunnelProtocolError extends Error {
  override name = "TunnelProtocolError";
  /** The refused request's id when it was read far enough to know it, so the reply can name it. */
  queryId = "";
}

const MAGIC0 = 0x54; // T
const MAGIC1 = 0x53; // S
const VERSION = 1;
const KIND_REQUEST = 1;
const KIND_RESULT = 2;
const PREFIX = 8;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function isCompression(value: unknown): value is Compression {
  return typeof value === "string" && (compressionModes as readonly string[]).includes(value);
}

function frame(kind: number, header: unknown, payload: Uint8Array): Uint8Array {
  const head = encoder.encode(JSON.stringify(header));
  const out = new Uint8Array(PREFIX + head.length + payload.length);
  out[0] = MAGIC0;
  out[1] = MAGIC1;
  out[2] = VERSION;
  out[3] = kind;
  new DataView(out.buffer).setUint32(4, head.length, false);
  out.set(head, PREFIX);
  out.set(payload, PREFIX + head.length);
  return out;
}

function unframe(
  bytes: Uint8Array,
  kind: number,
  maxHeaderBytes = Number.POSITIVE_INFINITY,
): { header: Record<string, unknown>; payload: Uint8Array } {
  if (bytes.length < PREFIX || bytes[0] !== MAGIC0 || bytes[1] !== MAGIC1) {
    throw new TunnelProtocolError("not a tunnel message");
  }
  if (bytes[2] !== VERSION) throw new TunnelProtocolError(`unsupported tunnel message version ${bytes[2]}`);
  if (bytes[3] !== kind) throw new TunnelProtocolError(kind === KIND_REQUEST ? "expected a request" : "expected a result");
  const headLen = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, false);
  if (PREFIX + headLen > bytes.length) throw new TunnelProtocolError("truncated tunnel message");
  if (headLen > maxHeaderBytes) throw new TunnelProtocolError("tunnel message header too large");
  let header: unknown;
  try {
    header = JSON.parse(decoder.decode(bytes.subarray(PREFIX, PREFIX + headLen)));
  } catch {
    throw new TunnelProtocolError("tunnel message header is not JSON");
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    throw new TunnelProtocolError("tunnel message header must be an object");
  }
  return {
    header: header as Record<string, unknown>,
    payload: bytes.subarray(PREFIX + headLen),
  };
}

export async function compress(mode: Compression, bytes: Uint8Array): Promise<Uint8Array> {
  if (mode === "none") return bytes;
  if (mode !== "gzip") throw new TunnelProtocolError(`unknown compression mode "${String(mode)}"`);
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Decompresses, refusing more than maxBytes of output (a small gzip can expand to gigabytes). */
export async function decompress(mode: unknown, bytes: Uint8Array, maxBytes = 512 * 1024 * 1024): Promise<Uint8Array> {
  if (mode === "none") {
    if (bytes.length > maxBytes) throw new TunnelProtocolError("tunnel data too large");
    return bytes;
  }
  if (mode !== "gzip") throw new TunnelProtocolError(`unknown compression mode "${String(mode)}"`);
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream("gzip"));
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new TunnelProtocolError("tunnel data too large");
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof TunnelProtocolError) throw err;
    throw new TunnelProtocolError("tunnel data is not valid gzip");
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export async function encodeRequest(request: TunnelRequest, bodyCompression: Compression = "none"): Promise<Uint8Array> {
  const body = await compress(bodyCompression, encoder.encode(JSON.stringify(request.want)));
  return frame(
    KIND_REQUEST,
    {
      queryId: request.queryId,
      tags: request.tags,
      compression: request.compression,
      bodyCompression,
    },
    body,
  );
}

/** A request header holds an id, tags and compression modes: a few hundred bytes. */
const maxRequestHeaderBytes = 64 * 1024;

/**
 * Why a request's time ranges are refused (lib/time/bounds.ts), or null: a range enters here, before any
 * store or worker sees it.
 */
function rangesProblem(want: Record<string, unknown>, nowMs: number): string | null {
  const named: [string, unknown][] = [];
  if (want.kind === "rows" || want.kind === "histogram" || want.kind === "endpoints") {
    const query = want.query as { filter?: { global?: unknown; focus?: unknown } } | null | undefined;
    const filter = typeof query === "object" && query !== null ? query.filter : undefined;
    named.push(["global time range", typeof filter === "object" && filter !== null ? filter.global : undefined]);
    if (filter?.focus !== undefined && filter.focus !== null) named.push(["focus time range", filter.focus]);
  } else if (want.kind === "events" && want.range !== undefined) {
    named.push(["time range", want.range]);
  }
  for (const [what, range] of named) {
    const problem = timeRangeProblem(range, nowMs);
    if (problem) return `${what} ${problem}`;
  }
  return null;
}

/**
 * Reads a request frame. Shape checks and time ranges only (the receiver validates the rest of the query);
 * a request that carries SQL text is refused, as is any unknown compression mode.
 */
export async function decodeRequest(bytes: Uint8Array, maxBodyBytes?: number, nowMs: number = Date.now()): Promise<TunnelRequest> {
  const { header, payload } = unframe(bytes, KIND_REQUEST, maxRequestHeaderBytes);
  if ("sql" in header || "statement" in header) throw new TunnelProtocolError("SQL is not accepted: send a query object");
  const queryId = header.queryId;
  if (typeof queryId !== "string" || !/^[\w-]{1,64}$/.test(queryId)) throw new TunnelProtocolError("invalid query id");
  if (!isCompression(header.compression)) throw new TunnelProtocolError(`unknown compression mode "${String(header.compression)}"`);
  if (!isCompression(header.bodyCompression)) {
    throw new TunnelProtocolError(`unknown compression mode "${String(header.bodyCompression)}"`);
  }
  const rawTags = (typeof header.tags === "object" && header.tags !== null ? header.tags : {}) as Record<string, unknown>;
  const tags: TunnelRequest["tags"] = {};
  if (rawTags.namespaceId !== undefined) tags.namespaceId = String(rawTags.namespaceId);
  if (rawTags.orgId !== undefined) tags.orgId = String(rawTags.orgId);
  let want: unknown;
  try {
    want = JSON.parse(decoder.decode(await decompress(header.bodyCompression, payload, maxBodyBytes)));
  } catch (err) {
    // The header was read: the reply can name the request.
    const refused = err instanceof TunnelProtocolError ? err : new TunnelProtocolError("request body is not JSON");
    refused.queryId = queryId;
    throw refused;
  }
  if (typeof want === "string") throw new TunnelProtocolError("SQL is not accepted: send a query object");
  if (typeof want !== "object" || want === null || Array.isArray(want)) throw new TunnelProtocolError("request body must be an object");
  if ("sql" in want || "statement" in want) throw new TunnelProtocolError("SQL is not accepted: send a query object");
  const problem = rangesProblem(want as Record<string, unknown>, nowMs);
  if (problem) {
    const err = new TunnelProtocolError(problem);
    err.queryId = queryId;
    throw err;
  }
  return {
    queryId,
    tags,
    compression: header.compression,
    want: want as TunnelWant,
  };
}

export function encodeResult(result: TunnelResult): Uint8Array {
  const { data, ...header } = result;
  return frame(KIND_RESULT, header, data);
}

/** Reads a result frame (data still compressed). An unknown compression mode throws. */
export function decodeResult(bytes: Uint8Array): TunnelResult {
  const { header, payload } = unframe(bytes, KIND_RESULT);
  if (!isCompression(header.compression)) throw new TunnelProtocolError(`unknown compression mode "${String(header.compression)}"`);
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  return {
    queryId: String(header.queryId ?? ""),
    tunnelError: str(header.tunnelError),
    databaseQueryId: str(header.databaseQueryId),
    databaseError: str(header.databaseError),
    compression: header.compression,
    data: payload,
  };
}

/** Re-labels a result frame (a worker's answer relayed to the client under the client's query id). */
export function relabelResult(bytes: Uint8Array, queryId: string): Uint8Array {
  return encodeResult({ ...decodeResult(bytes), queryId });
}

export async function encodeResultData(mode: Compression, data: TunnelResultData): Promise<Uint8Array> {
  return compress(mode, encoder.encode(JSON.stringify(data)));
}

export async function decodeResultData(result: TunnelResult): Promise<TunnelResultData> {
  const bytes = await decompress(result.compression, result.data);
  return JSON.parse(decoder.decode(bytes)) as TunnelResultData;
}

export function errorResult(
  queryId: string,
  error: {
    tunnelError?: string;
    databaseError?: string;
    databaseQueryId?: string | null;
  },
): TunnelResult {
  return {
    queryId,
    tunnelError: error.tunnelError ?? null,
    databaseQueryId: error.databaseQueryId ?? null,
    databaseError: error.databaseError ?? null,
    compression: "none",
    data: new Uint8Array(0),
  };
}

const KIND_PART = 3;

/** A worker's result frames: sent in parts of at most `partBytes`, joined up to `maxResultBytes` by the server. */
export const workerLimits = { partBytes: 4 * 1024 * 1024, maxResultBytes: 256 * 1024 * 1024 };

/**
 * A worker's result frame larger than one WebSocket frame may be (the server takes frames of up to 16 MiB) is sent
 * in parts: each a "TS" frame of kind 3 with header `{ part, of, bytes }` and a slice of the result as payload.
 * A result that fits goes whole, as before.
 */
export function splitFrame(bytes: Uint8Array, partBytes: number, streamId: string): Uint8Array[] {
  if (bytes.length <= partBytes) return [bytes];
  const parts: Uint8Array[] = [];
  const of = Math.ceil(bytes.length / partBytes);
  for (let part = 0; part < of; part++) {
    parts.push(
      frame(KIND_PART, { stream: streamId, part, of, bytes: bytes.length }, bytes.subarray(part * partBytes, (part + 1) * partBytes)),
    );
  }
  return parts;
}

/**
 * Joins the parts of split frames (splitFrame) as they arrive on one socket; any other frame passes through. A
 * stream over `maxBytes`, or whose parts come out of order, is dropped and reported (the request it answers times
 * out or fails as a lost answer would).
 */
export class FrameJoiner {
  private stream: { id: string; next: number; of: number; bytes: Uint8Array; at: number } | null = null;

  constructor(private readonly maxBytes: number) {}

  /** The whole frame once complete; null while parts are missing. Throws TunnelProtocolError for a bad part. */
  push(bytes: Uint8Array): Uint8Array | null {
    if (bytes.length < PREFIX || bytes[3] !== KIND_PART) return bytes;
    const { header, payload } = unframe(bytes, KIND_PART, 1024);
    const id = String(header.stream ?? "");
    const part = Number(header.part);
    const of = Number(header.of);
    const total = Number(header.bytes);
    if (part === 0) {
      if (!Number.isSafeInteger(total) || total <= 0 || total > this.maxBytes || !Number.isSafeInteger(of) || of < 2) {
        this.stream = null;
        throw new TunnelProtocolError(`a split result of ${total} bytes is over the ${this.maxBytes} allowed`);
      }
      this.stream = { id, next: 0, of, bytes: new Uint8Array(total), at: 0 };
    }
    const s = this.stream;
    if (!s || s.id !== id || s.next !== part || s.at + payload.length > s.bytes.length) {
      this.stream = null;
      throw new TunnelProtocolError("a split result's parts came out of order");
    }
    s.bytes.set(payload, s.at);
    s.at += payload.length;
    s.next++;
    if (s.next < s.of) return null;
    this.stream = null;
    if (s.at !== s.bytes.length) throw new TunnelProtocolError("a split result came short");
    return s.bytes;
  }
}
