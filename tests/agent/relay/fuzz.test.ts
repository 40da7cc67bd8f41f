import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { constants, deflateRawSync } from "node:zlib";
import type { TCPSocketListener } from "bun";
import { hostMetadata } from "~/agent/event.ts";
import { type ReverseProxy, startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { createTracer, type Tracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { parseHostEnvironment } from "~/lib/server/env.ts";
import { c, s, trace, ws } from "../parse/helpers.ts";

/**
 * The relay with the real tracer as its observer: random and mutated HTTP byte streams, and random WebSocket frame
 * streams, arrive byte-identical in both directions and never crash it; half-close and resets pass through.
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

describe("relay fuzz: WebSocket frames", () => {
  /** A random WebSocket conversation: the handshake, then each side's frames (data in random fragments, control frames between them). */
  function conversation(rand: () => number): { head: Uint8Array; client: Uint8Array; server: Uint8Array } {
    const isDeflate = rand() < 0.5;
    const extensions = isDeflate ? "permessage-deflate; server_no_context_takeover; client_no_context_takeover" : "";
    const frames = (isClient: boolean): Buffer[] => {
      const out: Buffer[] = [];
      const sizes = [0, 1, 125, 126, 127, 65535, 65536, 70_000];
      for (let m = 1 + Math.floor(rand() * 12); m > 0; m--) {
        const size = rand() < 0.3 ? sizes[Math.floor(rand() * sizes.length)]! : Math.floor(rand() * 3000);
        const isText = rand() < 0.5;
        let payload: Uint8Array = isText ? Buffer.from("é".repeat(Math.ceil(size / 2)).slice(0, Math.ceil(size / 2))) : randomBytes(size);
        const isCompressed = isDeflate && rand() < 0.7;
        if (isCompressed) {
          const packed = deflateRawSync(payload, { finishFlush: constants.Z_SYNC_FLUSH });
          payload = packed.subarray(0, packed.length - 4);
        }
        const pieces = 1 + Math.floor(rand() * 4);
        for (let p = 0; p < pieces; p++) {
          const from = Math.floor((payload.length * p) / pieces);
          const to = Math.floor((payload.length * (p + 1)) / pieces);
          const opcode = p === 0 ? (isText ? 1 : 2) : 0;
          out.push(ws.frame(opcode, payload.subarray(from, to), { fin: p === pieces - 1, rsv1: isCompressed && p === 0, mask: isClient }));
          if (rand() < 0.2) out.push(ws.frame(rand() < 0.5 ? 9 : 10, randomBytes(Math.floor(rand() * 126)), { mask: isClient }));
        }
      }
      out.push(ws.frame(8, ws.close(1000, "fuzz"), { mask: isClient }));
      return out;
    };
    return {
      head: Buffer.from(ws.request(extensions)),
      client: Buffer.concat(frames(true)),
      server: Buffer.concat([Buffer.from(ws.response(extensions)), ...frames(false)]),
    };
  }
  const randomBytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));

  /**
   * The client sends the handshake and, once the server answers (RFC 6455 4.1: a client waits for the 101), its frames
   * in random pieces; the upstream answers the handshake's first read with `server`, in random pieces. Both collect
   * what they got.
   */
  async function exchange(
    head: Uint8Array,
    client: Uint8Array,
    server: Uint8Array,
    rand: () => number,
    observer: Tracer,
  ): Promise<{ atServer: Buffer; atClient: Buffer }> {
    const atServer: Buffer[] = [];
    let serverDone: (b: Buffer) => void = () => {};
    const serverGot = new Promise<Buffer>((resolve) => (serverDone = resolve));
    type State = { isSent: boolean; isWritten: boolean; hasClientEnded: boolean };
    // The server ends its side once it has written everything and heard the client's FIN.
    const maybeEnd = (socket: { data: State; end(): void }) => {
      if (socket.data.isWritten && socket.data.hasClientEnded) socket.end();
    };
    const upstream = Bun.listen<State>({
      hostname: "127.0.0.1",
      port: 0,
      allowHalfOpen: true,
      socket: {
        open(socket) {
          socket.data = { isSent: false, isWritten: false, hasClientEnded: false };
        },
        async data(socket, chunk) {
          atServer.push(Buffer.from(chunk));
          if (socket.data.isSent) return;
          socket.data.isSent = true;
          for (let offset = 0; offset < server.length; ) {
            const size = Math.min(server.length - offset, 1 + Math.floor(rand() * 9000));
            let written = 0;
            while (written < size) {
              written += Math.max(0, socket.write(server.subarray(offset + written, offset + size)));
              if (written < size) await Bun.sleep(1);
            }
            offset += size;
          }
          socket.data.isWritten = true;
          maybeEnd(socket);
        },
        end(socket) {
          serverDone(Buffer.concat(atServer));
          socket.data.hasClientEnded = true;
          maybeEnd(socket);
        },
      },
    } as Bun.TCPSocketListenOptions<State>) as unknown as TCPSocketListener<State>;
    const relay = startReverseProxy({
      listenHost: "127.0.0.1",
      listenPort: 0,
      targetHost: "127.0.0.1",
      targetPort: upstream.port,
      observer,
    });
    const atClient = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket: Socket = connect({ port: relay.port, host: "127.0.0.1", allowHalfOpen: true }, () => socket.write(head));
      socket.once("data", async () => {
        for (let offset = 0; offset < client.length; ) {
          const size = Math.min(client.length - offset, 1 + Math.floor(rand() * 9000));
          if (!socket.write(client.subarray(offset, offset + size))) await new Promise((r) => socket.once("drain", r));
          offset += size;
        }
        socket.end();
      });
      socket.on("data", (d: Buffer) => chunks.push(d));
      socket.on("end", () => {
        socket.end();
        resolve(Buffer.concat(chunks));
      });
      socket.on("error", reject);
    });
    const got = await serverGot;
    relay.stop();
    upstream.stop(true);
    return { atServer: got, atClient };
  }

  const summary = (e: TracedEvent) =>
    `${e.ws_direction} ${e.ws_opcode} ${e.ws_size} ${e.ws_wire_size} ${e.ws_is_compressed} ${e.ws_close_code} ${e.ws_message.length} ${e.ws_payload}`;

  test("random frame streams split at random boundaries arrive byte-identical, and read as they do unsplit", async () => {
    for (let round = 0; round < 12; round++) {
      const rand = seeded(500 + round);
      const { head, client, server } = conversation(rand);
      const relayed: TracedEvent[] = [];
      const observer = createTracer({
        host: hostMetadata(parseHostEnvironment({})),
        service: "fuzz",
        onEvent: (e) => relayed.push(toTracedEvent(e)),
      });
      const { atServer, atClient } = await exchange(head, client, server, rand, observer);
      expect(Buffer.compare(atServer, Buffer.concat([head, client]))).toBe(0);
      expect(Buffer.compare(atClient, Buffer.from(server))).toBe(0);
      observer.flush();
      await Bun.sleep(20);
      observer.flush();
      // The same two streams, each in one piece, straight into a tracer.
      const whole = trace([c(head), s(server), c(client)], { redact: "redact" }).events;
      const bySide = (list: TracedEvent[], who: string) => list.filter((e) => e.protocol === "ws" && e.ws_direction === who).map(summary);
      for (const who of ["client", "server"]) expect(bySide(relayed, who)).toEqual(bySide(whole, who));
      expect(relayed.filter((e) => e.protocol === "ws").length).toBeGreaterThan(2);
    }
  }, 120_000);
});
