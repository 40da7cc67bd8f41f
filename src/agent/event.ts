import { readFileSync, readlinkSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { basename } from "node:path";
import { type CapturedEvent, neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import { cutText, publishLimits } from "~/lib/protocol/publish.ts";
import type { TokenBucket } from "~/lib/rate-limit.ts";
import type { HostEnvironment } from "~/lib/server/env.ts";
import { type BodySample, decodeBody } from "./parse/body.ts";
import type { Exchange } from "./parse/exchange.ts";
import { describeGrpcBody, isGrpc } from "./parse/grpc.ts";
import {
  type HeaderValueMemo,
  multipartBoundary,
  type RedactMode,
  redactCommandLine,
  redactHeader,
  redactJsonText,
  redactMultipart,
  redactQuery,
  redactTarget,
} from "./redact.ts";
import type { ConnectionInfo } from "./relay/observer.ts";

/** Facts about the machine the program runs on: the same for every event of a run. */
export type HostMetadata = Pick<
  TracedEvent,
  "hostname" | "gcp_project" | "kubernetes_namespace" | "gke_cluster_location" | "gke_cluster_name" | "gke_node_name"
>;

export type ProcessInfo = {
  pid: number;
  executableName: string;
  executableSize: number;
  commandLine: string;
  user: string;
};

const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

export function hostMetadata(env: HostEnvironment): HostMetadata {
  let kubernetesNamespace = env.kubernetesNamespace;
  if (env.isKubernetes && !kubernetesNamespace) kubernetesNamespace = readText(SERVICE_ACCOUNT_NAMESPACE).trim();
  return {
    hostname: hostname(),
    gcp_project: env.gcpProject,
    kubernetes_namespace: kubernetesNamespace,
    gke_cluster_location: env.gkeClusterLocation,
    gke_cluster_name: env.gkeClusterName,
    gke_node_name: env.gkeNodeName,
  };
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

const MAX_COMMAND_LINE = 4096;
let passwd: Map<number, string> | null = null;

function userName(uid: number): string {
  if (!passwd) {
    passwd = new Map();
    for (const line of readText("/etc/passwd").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && id && !passwd.has(Number(id))) passwd.set(Number(id), name);
    }
  }
  return passwd.get(uid) ?? String(uid);
}

/**
 * Reads /proc/<pid>; a process that is already gone gives empty fields, never an error. The command line is
 * redacted argument by argument (`--db-password=...`) before the arguments are joined.
 */
export function readProcessInfo(pid: number, procRoot = "/proc", redact: RedactMode = "redact"): ProcessInfo {
  const info: ProcessInfo = { pid, executableName: "", executableSize: 0, commandLine: "", user: "" };
  if (pid <= 0) return info;
  const dir = `${procRoot}/${pid}`;
  try {
    const exe = readlinkSync(`${dir}/exe`).replace(/ \(deleted\)$/, "");
    info.executableName = basename(exe);
    info.executableSize = statSync(exe).size;
  } catch {
    info.executableName = readText(`${dir}/comm`).trim();
  }
  const cmdline = readText(`${dir}/cmdline`);
  // Cut before redacting (arguments can reach megabytes); a cut argument is still judged by its flag.
  const args =
    cmdline === ""
      ? []
      : cmdline
          .slice(0, MAX_COMMAND_LINE * 2)
          .replace(/\0+$/, "")
          .split("\0");
  info.commandLine = redactCommandLine(args, redact).join(" ").slice(0, MAX_COMMAND_LINE);
  const uid = /^Uid:\s+(\d+)/m.exec(readText(`${dir}/status`));
  if (uid) info.user = userName(Number(uid[1]));
  return info;
}

/** Process facts by pid, read once per process (processes come and go; pids are reused rarely). */
export class ProcessCache {
  private readonly cache = new Map<number, ProcessInfo>();
  constructor(
    private readonly read: (pid: number) => ProcessInfo = readProcessInfo,
    private readonly max = 4096,
  ) {}

  get(pid: number): ProcessInfo {
    let info = this.cache.get(pid);
    if (info) return info;
    info = this.read(pid);
    if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value as number);
    this.cache.set(pid, info);
    return info;
  }
}

export type EventContext = {
  host: HostMetadata;
  /** --service / TAPSCOPE_SERVICE; otherwise the executable name. */
  service: string | undefined;
  redact: RedactMode;
  payloadLimit: number;
  /** Long header values already redacted: one per tracer. */
  headerMemo: HeaderValueMemo;
  /**
   * Milliseconds the tracer may spend decoding bodies (gzip, deflate, br, gRPC): one per tracer. Output caps bound
   * what a body decodes to, not what decoding it costs (a brotli stream of a hundred bytes may ask for a 16 MiB
   * window, about 30 ms); once spent, bodies stay as sent until it refills.
   */
  decodeBudget: TokenBucket;
};

/** What decodeBudget refills: a tenth of a core, with up to 200 ms at once. */
export const DECODE_BUDGET = { ratePerSecond: 100, burst: 200 } as const;

const spent: unique symbol = Symbol("decoding budget spent");

/** Runs `decode` if the budget has time left, charging what it took; `spent` when it has none. */
function withinDecodeBudget<T>(ctx: EventContext, decode: () => T): T | typeof spent {
  const started = performance.now();
  if (ctx.decodeBudget.available(started) <= 0) return spent;
  try {
    return decode();
  } finally {
    ctx.decodeBudget.spend(performance.now() - started);
  }
}

const budgetSpent = "the tracer's time for decoding bodies is spent for now";

/** What every event of a connection carries; the rest starts neutral (the field table's neutral values). */
export function baseEvent(conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): CapturedEvent {
  const e: CapturedEvent = neutralEvent();
  e.service = ctx.service || proc.executableName || "unknown";
  e.hostname = ctx.host.hostname;
  e.gcp_project = ctx.host.gcp_project;
  e.kubernetes_namespace = ctx.host.kubernetes_namespace;
  e.gke_cluster_location = ctx.host.gke_cluster_location;
  e.gke_cluster_name = ctx.host.gke_cluster_name;
  e.gke_node_name = ctx.host.gke_node_name;
  e.process_id = proc.pid;
  e.process_executable_name = proc.executableName;
  e.process_executable_size = proc.executableSize;
  e.process_command_line = proc.commandLine;
  e.process_user = proc.user;
  e.protocol = "tcp";
  e.http_is_outgoing = conn.direction === "outbound";
  e.http_client_addr = conn.clientAddr;
  e.http_server_addr = conn.serverAddr;
  return e;
}

export const span = (from: number, to: number) => (from > 0 && to >= from ? Math.round(to - from) : from > 0 ? 0 : -1);

/**
 * One HTTP exchange -> the published event: redacted, bodies decoded for display. Bodies stay bytes (the kept
 * sample itself, not a copy): the publisher carries them as bytes and the server base64s them for storage.
 */
export function buildHttpEvent(ex: Exchange, conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): CapturedEvent {
  const e = baseEvent(conn, proc, ctx);
  const req = ex.request;
  const resp = ex.response;
  e.protocol = "http";
  e.event_id = ex.eventId;
  e.parent_event_id = ex.parentEventId;
  e.time = Math.round(ex.requestStartAt);
  e.http_version = ex.httpVersion ?? `1.${req.versionMinor}`;
  e.http_req_method = req.method;
  e.http_req_path = redactTarget(requestPath(req.target), ctx.redact);
  e.http_req_host = req.host || hostOfAbsoluteTarget(req.target);
  e.http_req_x_forwarded_for = req.xForwardedFor;
  e.http_req_transfer_encoding = req.transferEncoding;
  e.http_req_content_type = req.contentType;
  e.http_req_content_encoding = req.contentEncoding;
  e.http_req_content_length = req.contentLength;
  e.http_req_body_size_bytes_wire = ex.requestBodyWire;
  e.http_req_headers = eventHeaders(withTrailers(req.headers, ex.requestTrailers), ctx, e.tags, "req");
  const reqBody = encodeBody(ex.requestBody, req.contentEncoding, ctx, e.tags, "req");
  e.http_req_body = redactBody(reqBody, req.contentType, ctx.redact);
  e.http_req_body_truncated = isTruncated(ex.requestBody, ex.requestBodyWire);
  e.bytes_sent = req.headBytes + ex.requestBodyWire;
  if (resp) {
    e.http_resp_status_code = resp.status;
    e.http_resp_transfer_encoding = resp.transferEncoding;
    e.http_resp_content_type = resp.contentType;
    e.http_resp_content_encoding = resp.contentEncoding;
    e.http_resp_content_length = resp.contentLength;
    e.http_resp_body_size_bytes_wire = ex.responseBodyWire;
    e.http_resp_headers = eventHeaders(withTrailers(resp.headers, ex.responseTrailers), ctx, e.tags, "resp");
    e.http_resp_body = redactBody(encodeBody(ex.responseBody, resp.contentEncoding, ctx, e.tags, "resp"), resp.contentType, ctx.redact);
    e.http_resp_body_truncated = isTruncated(ex.responseBody, ex.responseBodyWire);
    e.bytes_received = resp.headBytes + ex.responseBodyWire;
    if (!ex.httpVersion && resp.versionMinor !== req.versionMinor) e.tags.http_resp_version = `1.${resp.versionMinor}`;
  }
  const isOutbound = conn.direction === "outbound";
  if (isOutbound && ex.isFirstOnConnection && conn.connectedAt >= conn.startedAt && conn.startedAt > 0) {
    e.timing_connect = Math.round(conn.connectedAt - conn.startedAt);
  }
  e.timing_send = span(ex.requestStartAt, ex.requestEndAt);
  if (resp) {
    e.timing_wait = Math.max(0, Math.round(ex.responseStartAt - ex.requestEndAt));
    e.timing_receive = span(ex.responseStartAt, ex.responseEndAt);
    e.http_duration = Math.max(0, Math.round((ex.tunnelClosedAt ?? ex.responseEndAt) - ex.requestStartAt));
  } else if (ex.unanswered) {
    // The time it waited: to the moment the client gave up, the server closed, or the connection was reset.
    e.http_unanswered = ex.unanswered.reason;
    e.http_duration = Math.max(0, Math.round(ex.unanswered.at - ex.requestStartAt));
    e.timing_wait = Math.max(0, Math.round(ex.unanswered.at - ex.requestEndAt));
  } else {
    e.http_duration = Math.max(0, Math.round(ex.requestEndAt - ex.requestStartAt));
  }
  if (conn.tls) {
    e.tls_server_name = conn.tls.serverName;
    e.tags.tls = "decrypted";
    if (conn.tls.alpn) e.tags.tls_alpn = conn.tls.alpn;
    if (isOutbound && ex.isFirstOnConnection) e.timing_tls = span(conn.tls.handshakeStartedAt, conn.tls.handshakeDoneAt);
  }
  if (isGrpc(req.contentType) || (resp && isGrpc(resp.contentType))) addGrpcTags(e.tags, ex, ctx);
  if (ex.interimStatuses.length > 0) e.tags.interim_statuses = ex.interimStatuses.join(",");
  if (ex.incompleteReason) e.tags.incomplete = ex.incompleteReason;
  if (ex.tunnelClosedAt !== undefined) e.tags.tunnel = "closed";
  if (conn.tunnel) e.tags.proxy = conn.tunnel.proxyAddr;
  if (ex.ambiguousFraming) e.tags.ambiguous_framing = ex.ambiguousFraming;
  if (resp?.status === 101 && resp.upgrade) e.tags.upgrade = resp.upgrade.toLowerCase();
  else if (ex.connectProtocol && resp && resp.status >= 200 && resp.status < 300) e.tags.upgrade = ex.connectProtocol.toLowerCase();
  return e;
}

/** A request still waiting for its answer, as the live list shows it: redacted as its event will be. */
export function buildPendingRequest(ex: Exchange, conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): PendingRequest {
  const req = ex.request;
  return {
    event_id: ex.eventId,
    parent_event_id: ex.parentEventId,
    time: Math.round(ex.requestStartAt),
    service: ctx.service || proc.executableName || "unknown",
    http_version: ex.httpVersion ?? `1.${req.versionMinor}`,
    http_req_method: req.method,
    http_req_host: req.host || hostOfAbsoluteTarget(req.target),
    http_req_path: redactTarget(requestPath(req.target), ctx.redact),
    http_is_outgoing: conn.direction === "outbound",
    http_server_addr: conn.serverAddr,
  };
}

function headerOf(headers: Array<[string, string]> | null | undefined, name: string): string {
  if (!headers) return "";
  for (const [n, v] of headers) if (n.toLowerCase() === name) return v;
  return "";
}

/** grpc-message is percent-encoded on the wire (gRPC over HTTP/2 spec); shown as the text the server wrote. */
function grpcMessageText(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** gRPC status (trailers, or headers of a trailers-only answer) and the messages decoded without a schema. */
function addGrpcTags(tags: Record<string, string>, ex: Exchange, ctx: EventContext): void {
  const resp = ex.response;
  const status = headerOf(ex.responseTrailers, "grpc-status") || headerOf(resp?.headers, "grpc-status");
  if (status) tags.grpc_status = status;
  const message = headerOf(ex.responseTrailers, "grpc-message") || headerOf(resp?.headers, "grpc-message");
  if (message) tags.grpc_message = grpcMessageText(message).slice(0, 500);
  const reqBody = ex.requestBody;
  if (reqBody && reqBody.length > 0) {
    const text = withinDecodeBudget(ctx, () => describeGrpcBody(reqBody.bytes(), headerOf(ex.request.headers, "grpc-encoding")));
    if (text === spent) tags.req_grpc = `<${budgetSpent}>`;
    else if (text) tags.req_grpc = text;
  }
  const respBody = ex.responseBody;
  if (resp && respBody && respBody.length > 0) {
    const text = withinDecodeBudget(ctx, () => describeGrpcBody(respBody.bytes(), headerOf(resp.headers, "grpc-encoding")));
    if (text === spent) tags.resp_grpc = `<${budgetSpent}>`;
    else if (text) tags.resp_grpc = text;
  }
}

export type ConnectionSummary = {
  openedAt: number;
  closedAt: number;
  bytesFromClient: number;
  bytesFromServer: number;
  tags: Record<string, string>;
  tlsServerName: string;
  httpVersion: string;
  eventId: string;
  parentEventId: string;
};

/** A connection that was not (or stopped being) HTTP/1: peer, bytes each way, duration. */
export function buildTcpEvent(sum: ConnectionSummary, conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): CapturedEvent {
  const e = baseEvent(conn, proc, ctx);
  e.event_id = sum.eventId;
  e.parent_event_id = sum.parentEventId;
  e.time = Math.round(sum.openedAt);
  e.tls_server_name = sum.tlsServerName;
  e.http_version = sum.httpVersion;
  e.http_duration = Math.max(0, Math.round(sum.closedAt - sum.openedAt));
  e.bytes_sent = sum.bytesFromClient;
  e.bytes_received = sum.bytesFromServer;
  if (conn.direction === "outbound" && conn.connectedAt >= conn.startedAt && conn.startedAt > 0) {
    e.timing_connect = Math.round(conn.connectedAt - conn.startedAt);
  }
  e.tags = sum.tags;
  if (conn.tunnel) e.tags.proxy = conn.tunnel.proxyAddr;
  if (conn.tls) {
    e.tls_server_name ||= conn.tls.serverName;
    e.tags.tls = "decrypted";
    if (conn.tls.alpn) e.tags.tls_alpn = conn.tls.alpn;
    if (conn.direction === "outbound") e.timing_tls = span(conn.tls.handshakeStartedAt, conn.tls.handshakeDoneAt);
  }
  return e;
}

const { maxHeaderCount, maxHeaderNameChars, maxHeaderValueChars } = publishLimits;

/**
 * Headers as the server keeps them (the same count and sizes, the same cut), redacted. Cut before redacting, so
 * the work per event is bounded by what is kept; long values go through the memo. The same array when nothing
 * changes (most requests). Headers beyond the count are dropped and the event says how many.
 */
function eventHeaders(
  headers: Array<[string, string]>,
  ctx: EventContext,
  tags: Record<string, string>,
  side: "req" | "resp",
): Array<[string, string]> {
  const n = Math.min(headers.length, maxHeaderCount);
  if (n < headers.length) tags[`${side}_headers_dropped`] = String(headers.length - n);
  const memo = ctx.headerMemo;
  let out: Array<[string, string]> | null = null;
  for (let i = 0; i < n; i++) {
    const [name, value] = headers[i] as [string, string];
    const keptName = name.length > maxHeaderNameChars ? cutText(name, maxHeaderNameChars) : name;
    let kept: string;
    if (value.length < memo.minLength) kept = redactHeader(keptName, value, ctx.redact);
    else {
      kept =
        memo.get(keptName, value) ??
        memo.set(
          keptName,
          value,
          redactHeader(keptName, value.length > maxHeaderValueChars ? cutText(value, maxHeaderValueChars) : value, ctx.redact),
        );
    }
    if (kept === value && keptName === name) continue;
    out ??= headers.slice(0, n);
    out[i] = [keptName, kept];
  }
  return out ?? (n < headers.length ? headers.slice(0, n) : headers);
}

function withTrailers(headers: Array<[string, string]>, trailers: Array<[string, string]> | null): Array<[string, string]> {
  if (!trailers || trailers.length === 0) return headers;
  // Trailers are marked so the detail view can show them apart (gRPC status lives there).
  return [...headers, ...trailers.map(([n, v]): [string, string] => [`trailer:${n}`, v])];
}

function isTruncated(sample: BodySample | null, wire: number): boolean {
  if (wire === 0) return false;
  if (!sample) return true;
  return sample.isTruncated || sample.length < wire;
}

const noBytes = new Uint8Array(0);

function encodeBody(
  sample: BodySample | null,
  contentEncoding: string,
  ctx: EventContext,
  tags: Record<string, string>,
  side: "req" | "resp",
): Uint8Array {
  if (!sample || sample.length === 0) return noBytes;
  const raw = sample.bytes();
  if (contentEncoding && !sample.isTruncated) {
    // Decoded text may exceed the sample (compression), within what the server keeps per body (1 MiB).
    const maxOutput = Math.max(ctx.payloadLimit, Math.min(ctx.payloadLimit * 4, 1 << 20));
    const decoded = withinDecodeBudget(ctx, () => decodeBody(raw, contentEncoding, maxOutput));
    if (decoded === spent) tags[`${side}_body_not_decoded`] = budgetSpent;
    else if (decoded && "notDecoded" in decoded) tags[`${side}_body_not_decoded`] = decoded.notDecoded;
    else if (decoded) {
      tags[`${side}_body_decoded`] = decoded.decodedFrom;
      return decoded.bytes;
    }
  }
  return raw;
}

/**
 * Bodies carry the same secrets as query strings and headers: form fields (password=...) and JSON
 * members ({"password": ...}, an OAuth token response's "access_token").
 */
function redactBody(body: Uint8Array, contentType: string, mode: RedactMode): Uint8Array {
  if (mode === "keep" || body.length === 0) return body;
  const kind = bodyKind(contentType);
  if (kind === "other") return body;
  // Form and multipart bodies as latin1 (one char per byte): what is not redacted goes back byte for byte.
  const encoding = kind === "json" ? "utf8" : "latin1";
  const text = Buffer.from(body.buffer, body.byteOffset, body.length).toString(encoding);
  const redacted =
    kind === "form"
      ? redactQuery(text, mode)
      : kind === "multipart"
        ? redactMultipart(text, multipartBoundary(contentType), mode)
        : redactJsonText(text, mode);
  return redacted === text ? body : new Uint8Array(Buffer.from(redacted, encoding));
}

type BodyKind = "form" | "multipart" | "json" | "other";

// Content types repeat on every request: the answer is remembered (bounded) instead of lower-cased each time.
const bodyKinds = new Map<string, BodyKind>();

function bodyKind(contentType: string): BodyKind {
  let kind = bodyKinds.get(contentType);
  if (kind) return kind;
  const type = contentType.toLowerCase();
  kind = type.startsWith("application/x-www-form-urlencoded")
    ? "form"
    : type.startsWith("multipart/form-data")
      ? "multipart"
      : type.includes("json")
        ? "json"
        : "other";
  if (bodyKinds.size < 1024) bodyKinds.set(contentType, kind);
  return kind;
}

/** Absolute-form targets (sent to proxies) become path and query. */
function requestPath(target: string): string {
  if (target.startsWith("/") || target === "*") return target;
  const scheme = target.indexOf("://");
  if (scheme > 0 && scheme < 10) {
    const slash = target.indexOf("/", scheme + 3);
    const q = target.indexOf("?", scheme + 3);
    if (slash === -1) return q === -1 ? "/" : `/${target.slice(q)}`;
    return q !== -1 && q < slash ? `/${target.slice(q)}` : target.slice(slash);
  }
  return target;
}

function hostOfAbsoluteTarget(target: string): string {
  const scheme = target.indexOf("://");
  if (scheme <= 0 || scheme >= 10) return target.startsWith("/") ? "" : target;
  const rest = target.slice(scheme + 3);
  const end = rest.search(/[/?#]/);
  return end === -1 ? rest : rest.slice(0, end);
}
