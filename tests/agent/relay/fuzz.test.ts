import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import type { TCPSocketListener } from "bun";
import { hostMetadata } from "~/agent/event.ts";
import { type ReverseProxy, startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { parseHostEnvironment } from "~/lib/server/env.ts";

/**
 * The relay with the real tracer as its observer: random and mutated HTTP byte streams arrive
 * byte-identical in both directions and never crash it; half-close and resets pass through.
 */
type EchoState = { queue: Uint8Array[]; isEnded: boolean };
let echo: TCPSocketListener<EchoState>;
let resetter: TCPSocketListener<undefined>;
let proxy: ReverseProxy;
let resetProxy: ReverseProxy;
const events: TracedEvent[] = [];
const tracer = createTracer({
  host: hostMetadata(parseHostEnvironment({})),
  service: "fuzz",
  onEvent: (e) => events.push(toTracedEvent(e)),
});

beforeAll(() => {
  // Echo everything back; answer a FIN with a FIN once everything is echoed.
  echo = Bun.listen<EchoState>({
    hostname: "127.0.0.1",
    port: 0,
    allowHalfOpen: true,
    socket: {
      open(socket) {
        socket.data = { queue: [], isEnded: false };
      },
      data(socket, chunk) {
        const state = socket.data;
        if (state.queue.length === 0) {
          const written = socket.write(chunk);
          if (written < chunk.length) state.queue.push(chunk.slice(Math.max(0, written)));
        } else state.queue.push(chunk.slice());
      },
      drain(socket) {
        const state = socket.data;
        while (state.queue.length > 0) {
          const head = state.queue[0]!;
          const written = socket.write(head);
          if (written < head.length) {
            state.queue[0] = head.slice(Math.max(0, written));
            return;
          }
          state.queue.shift();
        }
        if (state.isEnded) socket.end();
      },
      end(socket) {
        if (socket.data.queue.length === 0) socket.end();
        else socket.data.isEnded = true;
      },
    },
  } as Bun.TCPSocketListenOptions<EchoState>) as unknown as TCPSocketListener<EchoState>;
  // Reads the first bytes, then resets the connection.
  resetter = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(socket) {
        socket.terminate();
      },
    },
  });
  proxy = startReverseProxy({ listenHost: "127.0.0.1", listenPort: 0, targetHost: "127.0.0.1", targetPort: echo.port, observer: tracer });
  resetProxy = startReverseProxy({
    listenHost: "127.0.0.1",
    listenPort: 0,
    targetHost: "127.0.0.1",
    targetPort: resetter.port,
    observer: tracer,
  });
});
afterAll(() => {
  proxy.stop();
  resetProxy.stop();
  echo.stop(true);
  resetter.stop(true);
});

/** Writes `payload` in random-sized pieces, half-closes, and collects what comes back until the FIN. */
function roundTrip(port: number, payload: Uint8Array, rand: () => number): Promise<Buffer> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    const socket: Socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true }, async () => {
      let offset = 0;
      while (offset < payload.length) {
        const size = Math.min(payload.length - offset, 1 + Math.floor(rand() * 70_000));
        if (!socket.write(payload.subarray(offset, offset + size))) await new Promise((r) => socket.once("drain", r));
        offset += size;
      }
      socket.end();
    });
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("end", () => {
      socket.end();
      done(Buffer.concat(chunks));
    });
    socket.on("error", fail);
  });
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const httpSeeds = [
  "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
  "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
  "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
  "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
  "PATCH /p HTTP/1.0\r\n\r\n",
  "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
];

function mutatedHttp(rand: () => number): Uint8Array {
  const parts: number[] = [];
  const target = Math.floor(rand() * 200_000);
  while (parts.length < target) {
    const seed = new TextEncoder().encode(httpSeeds[Math.floor(rand() * httpSeeds.length)]!);
    for (const byte of seed) {
      const roll = rand();
      if (roll < 0.02) parts.push(Math.floor(rand() * 256));
      else if (roll < 0.03) continue;
      else if (roll < 0.04) parts.push(byte, byte);
      else parts.push(byte);
    }
    if (rand() < 0.1) for (let i = Math.floor(rand() * 5000); i > 0; i--) parts.push(Math.floor(rand() * 256));
  }
  return Uint8Array.from(parts);
}

describe("relay fuzz", () => {
  test("random byte streams come back byte-identical", async () => {
    const rand = seeded(1);
    for (let round = 0; round < 25; round++) {
      const size = round === 0 ? 0 : Math.floor(rand() * (round % 5 === 0 ? 3_000_000 : 100_000));
      const payload = new Uint8Array(size);
      for (let i = 0; i < size; i += 65536) crypto.getRandomValues(payload.subarray(i, Math.min(size, i + 65536)));
      const back = await roundTrip(proxy.port, payload, rand);
      expect(back.length).toBe(payload.length);
      expect(Buffer.compare(back, Buffer.from(payload))).toBe(0);
    }
  }, 60_000);

  test("mutated HTTP streams come back byte-identical, concurrently, and the tracer survives", async () => {
    const rand = seeded(2);
    const payloads = Array.from({ length: 40 }, () => mutatedHttp(rand));
    const results = await Promise.all(payloads.map((p, i) => roundTrip(proxy.port, p, seeded(100 + i))));
    results.forEach((back, i) => {
      expect(Buffer.compare(back, Buffer.from(payloads[i]!))).toBe(0);
    });
    // A well-formed exchange after all that is still traced.
    const before = events.length;
    await roundTrip(proxy.port, new TextEncoder().encode("GET /after-fuzz HTTP/1.1\r\nHost: a\r\n\r\n"), rand);
    tracer.flush();
    await Bun.sleep(50);
    expect(events.length).toBeGreaterThan(before);
  }, 60_000);

  test("half-close: the client's FIN reaches the server, which answers after it", async () => {
    const afterFin = Bun.listen<{ got: string }>({
      hostname: "127.0.0.1",
      port: 0,
      allowHalfOpen: true,
      socket: {
        open(socket) {
          socket.data = { got: "" };
        },
        data(socket, chunk) {
          socket.data.got += chunk.toString();
        },
        end(socket) {
          socket.write(`after FIN: ${socket.data.got}`);
          socket.end();
        },
      },
    } as Bun.TCPSocketListenOptions<{ got: string }>) as unknown as TCPSocketListener<{ got: string }>;
    const p = startReverseProxy({
      listenHost: "127.0.0.1",
      listenPort: 0,
      targetHost: "127.0.0.1",
      targetPort: afterFin.port,
      observer: tracer,
    });
    const direct = await roundTrip(afterFin.port, new TextEncoder().encode("request then FIN"), seeded(3));
    const relayed = await roundTrip(p.port, new TextEncoder().encode("request then FIN"), seeded(3));
    p.stop();
    afterFin.stop(true);
    expect(direct.toString()).toBe("after FIN: request then FIN");
    expect(relayed.toString()).toBe(direct.toString());
  });

  test("a reset by the server reaches the client as a reset", async () => {
    const outcome = (port: number) =>
      new Promise<string>((done) => {
        const socket = connect({ port, host: "127.0.0.1" }, () => socket.write("boom"));
        socket.on("error", (e: NodeJS.ErrnoException) => done(e.code ?? "error"));
        socket.on("end", () => done("end"));
        socket.on("close", () => done("close"));
      });
    expect(await outcome(resetter.port)).toBe("ECONNRESET");
    expect(await outcome(resetProxy.port)).toBe("ECONNRESET");
  });

  test("an unreachable target resets the client instead of hanging", async () => {
    const dead = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = dead.port;
    dead.stop(true);
    const p = startReverseProxy({ listenHost: "127.0.0.1", listenPort: 0, targetHost: "127.0.0.1", targetPort: port, observer: tracer });
    const result = await new Promise<string>((done) => {
      const socket = connect({ port: p.port, host: "127.0.0.1" }, () => socket.write("x"));
      socket.on("error", (e: NodeJS.ErrnoException) => done(e.code ?? "error"));
      socket.on("close", () => done("close"));
    });
    p.stop();
    expect(["ECONNRESET", "close"]).toContain(result);
  });
});
