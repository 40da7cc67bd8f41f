/**
 * HTTP/1 parser throughput: the tracer (sniff + parse + pair + body samples), with and without turning
 * exchanges into events, against a baseline that only touches the same bytes (a scan for LF, the least
 * any HTTP/1 parser must do). Run: bun bench/capture/parse-bench.ts [workload index] [--smoke: each workload a hundredth
 * of its size, 1 warm-up round and 1 measured]
 */
import { codeLengths } from "~/agent/parse/hpack.ts";
import { Http1Session } from "~/agent/parse/http1-session.ts";
import { Http2Session } from "~/agent/parse/http2-session.ts";
import type { ConnectionInfo } from "~/agent/relay/observer.ts";
import { createTracer } from "~/agent/tracer.ts";
import { isSmoke, positional } from "../options.ts";

const host = {
  hostname: "bench",
  gcp_project: "",
  kubernetes_namespace: "",
  gke_cluster_location: "",
  gke_cluster_name: "",
  gke_node_name: "",
};
const proc = (pid: number) => ({ pid, executableName: "server", executableSize: 1, commandLine: "server", user: "app" });
const info: ConnectionInfo = {
  id: 1,
  direction: "inbound",
  clientAddr: "127.0.0.1:1",
  serverAddr: "127.0.0.1:2",
  pid: 1,
  startedAt: 1,
  connectedAt: 1,
};

type Workload = { name: string; client: Uint8Array[]; server: Uint8Array[]; exchanges: number };

const enc = (s: string) => new TextEncoder().encode(s);

function chunk(data: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.slice(i, i + size));
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function smallRequests(n: number): Workload {
  const req = enc(
    "GET /api/users/12345?include=profile&page=2 HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) bench\r\nAccept: application/json\r\nAccept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789\r\nCookie: session=abc123; theme=dark\r\nX-Request-Id: 5f0c8a2e-8f5b-4c1e-9d7a-2b1e3c4d5e6f\r\nConnection: keep-alive\r\n\r\n",
  );
  const resp = enc(
    'HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 27\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\nServer: bench\r\nCache-Control: no-store\r\nX-Request-Id: 5f0c8a2e-8f5b-4c1e-9d7a-2b1e3c4d5e6f\r\n\r\n{"id":12345,"name":"Alice"}',
  );
  // One request and one response per read, like a keep-alive client.
  return {
    name: "small keep-alive exchanges (~0.6 KB each)",
    client: Array.from({ length: n }, () => req),
    server: Array.from({ length: n }, () => resp),
    exchanges: n,
  };
}

function largeBodies(n: number, size: number): Workload {
  const req = enc("GET /download HTTP/1.1\r\nHost: files\r\n\r\n");
  const body = new Uint8Array(size).map((_, i) => 97 + (i % 26));
  const resp = concat([enc(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`), body]);
  const server: Uint8Array[] = [];
  const client: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    client.push(req);
    server.push(...chunk(resp, 64 * 1024));
  }
  return { name: `${size / 1024} KiB responses in 64 KiB reads`, client, server, exchanges: n };
}

function chunkedBody(totalMiB: number): Workload {
  const req = enc("POST /upload HTTP/1.1\r\nHost: files\r\nTransfer-Encoding: chunked\r\n\r\n");
  const piece = new Uint8Array(16 * 1024).fill(120);
  const parts: Uint8Array[] = [req];
  const chunkHead = enc(`${piece.length.toString(16)}\r\n`);
  for (let i = 0; i < (totalMiB * 1024 * 1024) / piece.length; i++) parts.push(chunkHead, piece, enc("\r\n"));
  parts.push(enc("0\r\n\r\n"));
  const stream = concat(parts);
  return {
    name: `${totalMiB} MiB chunked request body (16 KiB chunks) in 64 KiB reads`,
    client: chunk(stream, 64 * 1024),
    server: [enc("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")],
    exchanges: 1,
  };
}

/** HPACK Huffman encoding (the canonical code of RFC 7541 from its lengths), for building realistic h2 traffic. */
function huffmanEncoder() {
  const order = codeLengths.map((len, sym) => [len, sym] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const codes: number[] = [];
  let code = 0;
  let prev = order[0]![0];
  for (const [len, sym] of order) {
    code *= 2 ** (len - prev);
    prev = len;
    codes[sym] = code;
    code++;
  }
  return (text: string): Uint8Array => {
    const bits: number[] = [];
    for (const ch of Buffer.from(text, "latin1")) {
      const len = codeLengths[ch]!;
      for (let b = len - 1; b >= 0; b--) bits.push(Math.floor(codes[ch]! / 2 ** b) % 2);
    }
    while (bits.length % 8) bits.push(1);
    const out = new Uint8Array(bits.length / 8);
    for (let i = 0; i < out.length; i++) for (let b = 0; b < 8; b++) out[i] = (out[i]! << 1) | bits[i * 8 + b]!;
    return out;
  };
}

/** gRPC-like h2c traffic: many concurrent streams, Huffman-coded literal headers, small DATA, trailers. */
function grpcStreams(n: number): Workload {
  const huff = huffmanEncoder();
  const str = (s: string) => {
    const h = huff(s);
    if (h.length >= 127) throw new Error("long");
    return concat([Uint8Array.of(0x80 | h.length), h]);
  };
  const literalNew = (name: string, value: string) => concat([Uint8Array.of(0), str(name), str(value)]);
  const frame = (type: number, flags: number, stream: number, payload: Uint8Array) =>
    concat([
      Uint8Array.of(
        payload.length >> 16,
        (payload.length >> 8) & 255,
        payload.length & 255,
        type,
        flags,
        stream >>> 24,
        (stream >> 16) & 255,
        (stream >> 8) & 255,
        stream & 255,
      ),
      payload,
    ]);
  const message = concat([Uint8Array.of(0, 0, 0, 0, 12), Uint8Array.of(0x0a, 5, ...enc("hello"), 0x10, 0x96, 0x01, 0x18, 1, 0x20, 2)]);
  const client: Uint8Array[] = [concat([enc("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(4, 0, 0, new Uint8Array(0))])];
  const server: Uint8Array[] = [frame(4, 0, 0, new Uint8Array(0))];
  // Like real encoders: the first stream's headers enter the dynamic table (incremental indexing), later
  // streams refer to them by index; the per-call header (a request id) is a fresh literal each time.
  const incr = (index: number, value: string) => concat([Uint8Array.of(0x40 | index), str(value)]);
  const firstReq = concat([
    Uint8Array.of(0x83, 0x86),
    incr(4, "/helloworld.Greeter/SayHello"),
    incr(1, "127.0.0.1:50051"),
    incr(31, "application/grpc"),
    concat([Uint8Array.of(0x40), str("te"), str("trailers")]),
    incr(58, "grpc-node-js/1.9.0"),
  ]);
  // Dynamic table, newest first: user-agent 62, te 63, content-type 64, authority 65, path 66.
  const laterReq = Uint8Array.of(0x83, 0x86, 0x80 | 66, 0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62);
  const firstResp = concat([
    Uint8Array.of(0x88),
    incr(31, "application/grpc+proto"),
    concat([Uint8Array.of(0x40), str("grpc-accept-encoding"), str("identity,deflate,gzip")]),
  ]);
  const laterResp = Uint8Array.of(0x88, 0x80 | 63, 0x80 | 62);
  for (let i = 0; i < n; i++) {
    const id = 1 + 2 * i;
    const reqBlock = concat([i === 0 ? firstReq : laterReq, literalNew("x-request-id", `req-${i}`)]);
    client.push(concat([frame(1, 4, id, reqBlock), frame(0, 1, id, message)]));
    const respBlock = i === 0 ? firstResp : laterResp;
    const trailers = concat([literalNew("grpc-status", "0"), literalNew("grpc-message", "OK")]);
    server.push(concat([frame(1, 4, id, respBlock), frame(0, 0, id, message), frame(1, 5, id, trailers)]));
  }
  return { name: "gRPC over h2c: streams with Huffman-coded headers, a message each way, trailers", client, server, exchanges: n };
}

type Mode = "baseline" | "parse" | "tracer";

/** Bytes touched once: find every LF (what any HTTP/1 parser must at least do). */
function baseline(w: Workload): void {
  let lines = 0;
  const scan = (c: Uint8Array) => {
    let i = c.indexOf(10);
    while (i !== -1) {
      lines++;
      i = c.indexOf(10, i + 1);
    }
  };
  const n = Math.max(w.client.length, w.server.length);
  for (let i = 0; i < n; i++) {
    if (i < w.client.length) scan(w.client[i]!);
    if (i < w.server.length) scan(w.server[i]!);
  }
  if (lines < 0) throw new Error("unreachable");
}

/** The HTTP/1 session alone: parse and pair, body samples kept, exchanges discarded. */
function parseOnly(w: Workload): void {
  let exchanges = 0;
  const hooks = { newEventId: () => "", parentEventId: () => "", onRequestStart: () => {}, onExchange: () => exchanges++ };
  const options = { payloadLimit: 64 * 1024, isOutbound: false };
  const session = w.name.startsWith("gRPC") ? new Http2Session(hooks, options) : new Http1Session(hooks, options);
  const n = Math.max(w.client.length, w.server.length);
  for (let i = 0; i < n; i++) {
    if (i < w.client.length) session.onData(true, w.client[i]!, i);
    if (i < w.server.length) session.onData(false, w.server[i]!, i);
  }
  session.onClose(n);
  if (exchanges !== w.exchanges) throw new Error(`expected ${w.exchanges} exchanges, got ${exchanges}`);
}

/** The whole tracer, events built (redaction, bodies, ids) and drained as the event loop would. */
function tracerRun(w: Workload): void {
  let events = 0;
  const tracer = createTracer({ onEvent: () => events++, host, processInfo: proc });
  const tap = tracer.onOpen(info)!;
  const n = Math.max(w.client.length, w.server.length);
  for (let i = 0; i < n; i++) {
    if (i < w.client.length) tap.onData(true, w.client[i]!, i);
    if (i < w.server.length) tap.onData(false, w.server[i]!, i);
    if ((i & 63) === 63) tracer.flush();
  }
  tap.onClose(n);
  tracer.flush();
  if (events !== w.exchanges) throw new Error(`expected ${w.exchanges} events, got ${events}`);
}

function runOnce(w: Workload, mode: Mode): number {
  // Each run starts without the previous run's garbage.
  Bun.gc(true);
  const started = performance.now();
  if (mode === "baseline") baseline(w);
  else if (mode === "parse") parseOnly(w);
  else tracerRun(w);
  return performance.now() - started;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const only = positional[0];
const scale = isSmoke ? 0.01 : 1;
const warmUpRounds = isSmoke ? 1 : 5;
const measuredRounds = isSmoke ? 1 : 10;
const workloads = [
  () => smallRequests(50_000 * scale),
  () => largeBodies(200 * scale, 1024 * 1024),
  () => chunkedBody(64 * scale),
  () => grpcStreams(50_000 * scale),
].filter((_, i) => !only || String(i) === only);
const results: string[] = [];
for (const make of workloads) {
  // Built one at a time so only the measured workload is in memory.
  const w = make();
  const bytes = [...w.client, ...w.server].reduce((n, c) => n + c.length, 0);
  const times: Record<Mode, number[]> = { baseline: [], parse: [], tracer: [] };
  // Alternate the modes so machine noise hits them alike; the first rounds warm the JIT and are not counted.
  for (let round = 0; round < warmUpRounds + measuredRounds; round++)
    for (const mode of ["baseline", "parse", "tracer"] as Mode[]) times[mode].push(runOnce(w, mode));
  const line = (mode: Mode) => {
    const ms = median(times[mode].slice(warmUpRounds));
    const mbs = bytes / 1e6 / (ms / 1000);
    const evs = w.exchanges / (ms / 1000);
    return `  ${mode.padEnd(13)} ${ms.toFixed(1).padStart(8)} ms  ${mbs.toFixed(0).padStart(6)} MB/s  ${evs.toFixed(0).padStart(9)} events/s`;
  };
  const ratio = median(times.parse.slice(warmUpRounds)) / median(times.baseline.slice(warmUpRounds));
  results.push(
    `${w.name}: ${(bytes / 1e6).toFixed(1)} MB, ${w.exchanges} exchanges`,
    line("baseline"),
    line("parse"),
    line("tracer"),
    `  parse/baseline time ratio: ${ratio.toFixed(2)}`,
  );
}
console.log(results.join("\n"));
