import { describe, expect, test } from "bun:test";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { rng } from "../../support/rng.ts";
import { bytes, connection, fakeProcess, host } from "./helpers.ts";

const samples = [
  "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
  "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
  "PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n",
  "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nab",
  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n\x81\x00",
  "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
  "HTTP/1.0 200 OK\r\n\r\nclose-delimited",
];

function mutate(input: Uint8Array, rnd: () => number): Uint8Array {
  const out = Array.from(input);
  const edits = 1 + Math.floor(rnd() * 6);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(rnd() * (out.length + 1));
    const op = rnd();
    const special = [13, 10, 32, 58, 48, 102, 0, 255][Math.floor(rnd() * 8)]!;
    if (op < 0.3) out.splice(at, 1);
    else if (op < 0.6) out.splice(at, 0, rnd() < 0.5 ? special : Math.floor(rnd() * 256));
    else if (op < 0.8) out[at] = special;
    else out.splice(at, 0, ...out.slice(0, Math.floor(rnd() * out.length)));
  }
  return Uint8Array.from(out);
}

function randomBytes(n: number, rnd: () => number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

describe("fuzz: random and mutated streams", () => {
  test("never throw out of the tap, never hang, and byte counts stay exact", () => {
    const started = performance.now();
    let totalEvents = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const rnd = rng(seed);
      const events: TracedEvent[] = [];
      const tracer = createTracer({
        onEvent: (e) => events.push(toTracedEvent(e)),
        host,
        processInfo: fakeProcess,
        payloadLimit: 1 + Math.floor(rnd() * 64),
      });
      const tap = tracer.onOpen(connection(seed, rnd() < 0.5 ? "inbound" : "outbound"))!;
      let fromClient = 0;
      let fromServer = 0;
      let at = 1000;
      const turns = 1 + Math.floor(rnd() * 8);
      for (let t = 0; t < turns; t++) {
        const isClient = t === 0 ? rnd() < 0.9 : rnd() < 0.5;
        const base = bytes(samples[Math.floor(rnd() * samples.length)]!);
        const data = rnd() < 0.15 ? randomBytes(Math.floor(rnd() * 200), rnd) : rnd() < 0.7 ? mutate(base, rnd) : base;
        let off = 0;
        while (off < data.length) {
          const n = Math.min(data.length - off, 1 + Math.floor(rnd() * 16));
          at += 1 + Math.floor(rnd() * 10);
          tap.onData(isClient, data.subarray(off, off + n), at);
          off += n;
        }
        if (isClient) fromClient += data.length;
        else fromServer += data.length;
        if (rnd() < 0.1) tap.onEnd?.(rnd() < 0.5, at);
      }
      tap.onClose(at + 1, rnd() < 0.2 ? "reset" : undefined);
      tracer.flush();
      const st = tracer.stats();
      expect(st.tapErrors).toBe(0);
      expect(st.bytesFromClients).toBe(fromClient);
      expect(st.bytesFromServers).toBe(fromServer);
      expect(st.openConnections).toBe(0);
      for (const e of events) {
        // Every event is well-formed whatever came in.
        expect(typeof e.event_id).toBe("string");
        expect(e.http_duration).toBeGreaterThanOrEqual(0);
        expect(e.http_req_body_size_bytes_wire).toBeGreaterThanOrEqual(0);
        if (e.protocol === "tcp") {
          expect(e.bytes_sent).toBe(fromClient);
          expect(e.bytes_received).toBe(fromServer);
        }
      }
      totalEvents += events.length;
    }
    expect(totalEvents).toBeGreaterThan(1000);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  test("a large random stream in big chunks stays bounded and fast", () => {
    const rnd = rng(42);
    const tracer = createTracer({ onEvent: () => {}, host, processInfo: fakeProcess });
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    // A valid request head followed by a body claiming 1 TB: the parser must not buffer it.
    const head = bytes("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000000\r\n\r\n");
    tap.onData(true, head, 1);
    const block = randomBytes(1 << 20, rnd);
    const started = performance.now();
    for (let i = 0; i < 64; i++) tap.onData(true, block, 2 + i);
    expect(performance.now() - started).toBeLessThan(2000);
    tap.onClose(100);
    tracer.flush();
    expect(tracer.stats().bytesFromClients).toBe(64 * block.length + head.length);
  });
});
