import type { ProcessInfo } from "~/agent/event.ts";
import type { RedactMode } from "~/agent/redact.ts";
import type { ConnectionInfo } from "~/agent/relay/observer.ts";
import { createTracer, type Tracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { rng } from "../../support/rng.ts";

export const host = {
  hostname: "test-host",
  gcp_project: "",
  kubernetes_namespace: "",
  gke_cluster_location: "",
  gke_cluster_name: "",
  gke_node_name: "",
};

export const fakeProcess = (pid: number): ProcessInfo => ({
  pid,
  executableName: "server",
  executableSize: 1234,
  commandLine: "server --port 8000",
  user: "app",
});

/** One side's turn in a conversation; `end` is a FIN from that side. */
export type Segment = { fromClient: boolean; data: string | Uint8Array } | { fromClient: boolean; end: true };

export const c = (data: string | Uint8Array): Segment => ({ fromClient: true, data });
export const s = (data: string | Uint8Array): Segment => ({ fromClient: false, data });
export const serverEnd: Segment = { fromClient: false, end: true };

export type Chunker = (length: number) => number[];

/** Chunk boundaries: whole, fixed sizes, one split point, random. */
export const whole: Chunker = (n) => [n];
export const bytewise: Chunker = (n) => Array.from({ length: n }, () => 1);
export const splitAt =
  (k: number): Chunker =>
  (n) =>
    k <= 0 || k >= n ? [n] : [k, n - k];
export function randomChunker(seed: number): Chunker {
  const rnd = rng(seed);
  return (n) => {
    const sizes: number[] = [];
    let left = n;
    while (left > 0) {
      const size = Math.min(left, 1 + Math.floor(rnd() * 20));
      sizes.push(size);
      left -= size;
    }
    return sizes;
  };
}

export const bytes = (data: string | Uint8Array) => (typeof data === "string" ? Buffer.from(data, "latin1") : data);

export type TraceOptions = {
  chunker?: Chunker;
  direction?: "inbound" | "outbound";
  payloadLimit?: number;
  redact?: RedactMode;
  pid?: number;
  /** Each segment advances the clock by this many microseconds. */
  step?: number;
  closeError?: string;
};

export type TraceResult = { events: TracedEvent[]; tracer: Tracer; clientBytes: number; serverBytes: number };

export function connection(id: number, direction: "inbound" | "outbound", pid = 100, at = 1_000_000): ConnectionInfo {
  return {
    id,
    direction,
    clientAddr: "127.0.0.1:50000",
    serverAddr: "127.0.0.1:8000",
    pid,
    startedAt: at,
    connectedAt: at + (direction === "outbound" ? 250 : 0),
  };
}

/** Runs a conversation through a fresh tracer, chunked as asked, and returns the events. */
export function trace(segments: Segment[], options: TraceOptions = {}): TraceResult {
  const events: TracedEvent[] = [];
  const tracer = createTracer({
    onEvent: (e) => events.push(toTracedEvent(e)),
    host,
    processInfo: fakeProcess,
    payloadLimit: options.payloadLimit,
    redact: options.redact ?? "keep",
  });
  const direction = options.direction ?? "inbound";
  let at = 1_000_000;
  const tap = tracer.onOpen(connection(1, direction, options.pid ?? 100, at));
  if (!tap) throw new Error("no tap");
  const chunker = options.chunker ?? whole;
  let clientBytes = 0;
  let serverBytes = 0;
  for (const seg of segments) {
    at += options.step ?? 1000;
    if ("end" in seg) {
      tap.onEnd?.(seg.fromClient, at);
      continue;
    }
    const data = bytes(seg.data);
    if (seg.fromClient) clientBytes += data.length;
    else serverBytes += data.length;
    let offset = 0;
    for (const size of chunker(data.length)) {
      // A fresh buffer per read, as the relay hands them over: the tap may keep views, but must never modify it.
      const chunk = new Uint8Array(data.subarray(offset, offset + size));
      tap.onData(seg.fromClient, chunk, at);
      if (!Buffer.from(chunk).equals(Buffer.from(data.subarray(offset, offset + size)))) throw new Error("the tap modified a read buffer");
      offset += size;
    }
  }
  at += options.step ?? 1000;
  tap.onClose(at, options.closeError);
  tracer.flush();
  return { events, tracer, clientBytes, serverBytes };
}

export const body = (e: TracedEvent, side: "req" | "resp") =>
  Buffer.from(side === "req" ? e.http_req_body : e.http_resp_body, "base64").toString("latin1");

/** A compact view of an HTTP event for comparisons across chunkings. */
export function summary(e: TracedEvent) {
  return {
    protocol: e.protocol,
    method: e.http_req_method,
    path: e.http_req_path,
    status: e.http_resp_status_code,
    reqWire: e.http_req_body_size_bytes_wire,
    respWire: e.http_resp_body_size_bytes_wire,
    reqBody: body(e, "req"),
    respBody: body(e, "resp"),
    reqHeaders: e.http_req_headers,
    respHeaders: e.http_resp_headers,
    tags: e.tags,
  };
}

/**
 * Every chunking we try for small messages: whole, one byte at a time, every single split point of
 * each segment, and a few random ones.
 */
export function chunkings(segments: Segment[]): Chunker[] {
  const longest = Math.max(...segments.map((seg) => ("end" in seg ? 0 : bytes(seg.data).length)));
  const all: Chunker[] = [whole, bytewise];
  for (let k = 1; k < longest; k++) all.push(splitAt(k));
  for (let seed = 1; seed <= 8; seed++) all.push(randomChunker(seed));
  return all;
}

/** HTTP/2 by hand: a frame, and HPACK representations (RFC 7541 section 6) without Huffman coding. */
export const h2 = {
  preface: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
  frame(type: number, flags: number, stream: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
    const n = payload.length;
    return Buffer.concat([
      Buffer.from([
        n >> 16,
        (n >> 8) & 255,
        n & 255,
        type,
        flags,
        (stream >>> 24) & 0x7f,
        (stream >> 16) & 255,
        (stream >> 8) & 255,
        stream & 255,
      ]),
      payload,
    ]);
  },
  settings: (): Buffer => h2.frame(4, 0, 0),
  /** HEADERS with END_HEADERS, and END_STREAM unless `isEnd` is false. */
  headers: (stream: number, block: Uint8Array, isEnd = true): Buffer => h2.frame(1, 0x4 | (isEnd ? 0x1 : 0), stream, block),
  data: (stream: number, data: string | Uint8Array, isEnd = true): Buffer => h2.frame(0, isEnd ? 1 : 0, stream, bytes(data)),
  int(value: number, prefixBits: number, firstByte: number): number[] {
    const max = (1 << prefixBits) - 1;
    if (value < max) return [firstByte | value];
    const out = [firstByte | max];
    let rest = value - max;
    while (rest >= 128) {
      out.push((rest % 128) + 128);
      rest = Math.floor(rest / 128);
    }
    out.push(rest);
    return out;
  },
  str: (s: string): number[] => [...h2.int(s.length, 7, 0), ...Buffer.from(s, "latin1")],
  indexed: (index: number): number[] => h2.int(index, 7, 0x80),
  /** A literal added to the dynamic table; `nameIndex` 0 sends the name as a literal too. */
  indexing: (name: string | number, value: string): number[] =>
    typeof name === "number" ? [...h2.int(name, 6, 0x40), ...h2.str(value)] : [0x40, ...h2.str(name), ...h2.str(value)],
  literal: (name: string | number, value: string): number[] =>
    typeof name === "number" ? [...h2.int(name, 4, 0), ...h2.str(value)] : [0, ...h2.str(name), ...h2.str(value)],
  sizeUpdate: (size: number): number[] => h2.int(size, 5, 0x20),
  block: (...parts: number[][]): Uint8Array => Uint8Array.from(parts.flat()),
};

/** WebSocket by hand: frames (RFC 6455 section 5.2) and the handshake's two heads. */
export const ws = {
  request: (extensions = "", path = "/chat") =>
    `GET ${path} HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extensions ? `Sec-WebSocket-Extensions: ${extensions}\r\n` : ""}\r\n`,
  response: (extensions = "") =>
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n${extensions ? `Sec-WebSocket-Extensions: ${extensions}\r\n` : ""}\r\n`,
  /** One frame; a client's is masked (RFC 6455 5.3), with a key of its own unless given. */
  frame(
    opcode: number,
    payload: string | Uint8Array,
    options: { fin?: boolean; mask?: boolean | number[]; rsv1?: boolean; length?: bigint } = {},
  ): Buffer {
    const data = bytes(payload);
    const n = options.length ?? BigInt(data.length);
    const b0 = (options.fin === false ? 0 : 0x80) | (options.rsv1 ? 0x40 : 0) | opcode;
    const key = options.mask === true ? [0x37, 0xfa, 0x21, 0x3d] : Array.isArray(options.mask) ? options.mask : null;
    const head: number[] = [b0];
    const maskBit = key ? 0x80 : 0;
    if (n < 126n) head.push(maskBit | Number(n));
    else if (n < 65536n) head.push(maskBit | 126, Number(n >> 8n) & 255, Number(n) & 255);
    else {
      head.push(maskBit | 127);
      for (let shift = 56n; shift >= 0n; shift -= 8n) head.push(Number((n >> shift) & 255n));
    }
    const body = Buffer.from(data);
    if (key) {
      head.push(...key);
      for (let i = 0; i < body.length; i++) body[i] = body[i]! ^ key[i & 3]!;
    }
    return Buffer.concat([Buffer.from(head), body]);
  },
  /** A client's frame: masked. */
  client: (opcode: number, payload: string | Uint8Array, options: { fin?: boolean; rsv1?: boolean } = {}) =>
    ws.frame(opcode, payload, { ...options, mask: true }),
  close: (code: number, reason = "") => Buffer.concat([Buffer.from([code >> 8, code & 255]), Buffer.from(reason)]),
};
