import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { brotliCompressSync, brotliDecompressSync, constants, gzipSync } from "node:zlib";
import type { TCPSocketListener } from "bun";
import { hostMetadata } from "~/agent/event.ts";
import { type ReverseProxy, startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { createTracer, type Tracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { parseHostEnvironment } from "~/lib/server/env.ts";
import { h2 } from "../parse/helpers.ts";

/**
 * The relay fuzz's expansion bombs: bytes that decode to far more than they are (HPACK references to a large table
 * entry, compressed bodies, compressed gRPC messages) pass through the relay byte for byte, and what the tracer
 * spends on them stays of the order of what it spends on as many ordinary bytes: each bomb is timed against a
 * baseline of the same shape and size, in the same test.
 */
const stops: Array<() => void> = [];
afterAll(() => {
  for (const stop of stops) stop();
});

type Setup = { tracer: Tracer; events: TracedEvent[]; port: number };

/** A server that answers each request (each blank line it reads) with `answer`, or opens with `greeting` and reads. */
function through(server: { greeting?: Uint8Array; answer?: Uint8Array }): Setup {
  const events: TracedEvent[] = [];
  const tracer = createTracer({
    host: hostMetadata(parseHostEnvironment({})),
    service: "bombs",
    onEvent: (e) => events.push(toTracedEvent(e)),
  });
  const upstream: TCPSocketListener<{ tail: string }> = Bun.listen<{ tail: string }>({
    hostname: "127.0.0.1",
    port: 0,
    allowHalfOpen: true,
    socket: {
      open(socket) {
        socket.data = { tail: "" };
        if (server.greeting) socket.write(server.greeting);
      },
      data(socket, chunk) {
        if (!server.answer) return;
        const text = socket.data.tail + chunk.toString("latin1");
        const heads = text.split("\r\n\r\n");
        socket.data.tail = heads.pop() ?? "";
        for (let i = 0; i < heads.length; i++) socket.write(server.answer);
      },
      end(socket) {
        socket.end();
      },
    },
  } as Bun.TCPSocketListenOptions<{ tail: string }>) as unknown as TCPSocketListener<{ tail: string }>;
  const proxy: ReverseProxy = startReverseProxy({
    listenHost: "127.0.0.1",
    listenPort: 0,
    targetHost: "127.0.0.1",
    targetPort: upstream.port,
    observer: tracer,
  });
  stops.push(() => {
    proxy.stop();
    upstream.stop(true);
  });
  return { tracer, events, port: proxy.port };
}

/** Sends `payload`, half-closes, reads until the server's FIN; the time includes turning what the tracer kept into events. */
async function timed(setup: Setup, payload: Uint8Array): Promise<{ ms: number; received: number }> {
  const started = performance.now();
  const received = await new Promise<number>((done, fail) => {
    let n = 0;
    const socket = connect({ port: setup.port, host: "127.0.0.1", allowHalfOpen: true }, () => socket.end(payload));
    socket.on("data", (d: Buffer) => {
      n += d.length;
    });
    socket.on("end", () => {
      socket.end();
      done(n);
    });
    socket.on("error", fail);
  });
  await Bun.sleep(0);
  setup.tracer.flush();
  return { ms: performance.now() - started, received };
}

/** The better of three runs each, alternating, so a busy moment of the machine does not decide. */
async function compare(bomb: () => Promise<{ ms: number }>, baseline: () => Promise<{ ms: number }>) {
  let bombMs = Number.POSITIVE_INFINITY;
  let baseMs = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    baseMs = Math.min(baseMs, (await baseline()).ms);
    bombMs = Math.min(bombMs, (await bomb()).ms);
  }
  return { bombMs, baseMs };
}

describe("expansion bombs through the relay", () => {
  test("HPACK: a 100 KB literal and 30,000 one-byte references to it cost about what 132 KB of ordinary HTTP/2 does", async () => {
    const setup = through({ greeting: h2.settings() });
    const referer = `https://example.com/?${"a=1&".repeat(25_000)}`;
    const get = [...h2.indexed(2), ...h2.indexed(6), ...h2.literal(4, "/")];
    const bomb = h2.block(
      h2.sizeUpdate(1024 * 1024),
      get,
      h2.indexing(51, referer),
      ...Array.from({ length: 30_000 }, () => h2.indexed(62)),
    );
    const bombBytes = Buffer.concat([Buffer.from(h2.preface), h2.settings(), h2.headers(1, bomb)]);
    // The same size: one request carrying the bytes as its body.
    const plain = Buffer.concat([
      Buffer.from(h2.preface),
      h2.settings(),
      h2.headers(1, h2.block(get), false),
      h2.data(1, Buffer.alloc(bomb.length - 9, 0x61)),
    ]);
    expect(Math.abs(plain.length - bombBytes.length)).toBeLessThan(100);
    const { bombMs, baseMs } = await compare(
      () => timed(setup, bombBytes),
      () => timed(setup, plain),
    );
    console.log(`HPACK bomb: ${bombMs.toFixed(1)} ms, same size plain: ${baseMs.toFixed(1)} ms`);
    expect(bombMs).toBeLessThan(Math.max(10 * baseMs, baseMs + 200));
    const passthrough = setup.events.filter((e) => e.protocol === "tcp").map((e) => e.tags.passthrough);
    expect(passthrough).toContain("header list over 64 KiB decoded");
    for (const e of setup.events) expect(e.http_req_headers.length).toBeLessThanOrEqual(256);
  }, 60_000);

  test("brotli: bodies of ninety bytes that ask for a 16 MiB window: the tracer's decoding time stays within its budget", async () => {
    const window = brotliCompressSync(Buffer.alloc(64 << 20), {
      params: { [constants.BROTLI_PARAM_QUALITY]: 2, [constants.BROTLI_PARAM_LGWIN]: 24 },
    });
    const small = brotliCompressSync(Buffer.from("hello ".repeat(10)));
    const answer = (body: Uint8Array) =>
      Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
    // What one decode of the bomb costs here, now.
    const one = performance.now();
    for (let i = 0; i < 3; i++) {
      try {
        brotliDecompressSync(window, { maxOutputLength: 4096 });
      } catch {}
    }
    const perBomb = (performance.now() - one) / 3;
    const requests = Buffer.from("GET /b HTTP/1.1\r\nHost: a\r\n\r\n".repeat(60));
    const bombSetup = through({ answer: answer(window) });
    const baseSetup = through({ answer: answer(small) });
    const bomb = await timed(bombSetup, requests);
    const base = await timed(baseSetup, requests);
    console.log(
      `60 brotli window bombs: ${bomb.ms.toFixed(1)} ms (one decode ${perBomb.toFixed(1)} ms); 60 small brotli bodies: ${base.ms.toFixed(1)} ms`,
    );
    expect(bombSetup.events).toHaveLength(60);
    // Decoding all sixty would cost 60 decodes; the budget allows a few hundred milliseconds' worth.
    expect(bomb.ms).toBeLessThan(base.ms + 30 * perBomb);
    const tags = bombSetup.events.map((e) => e.tags.resp_body_not_decoded);
    expect(tags.filter((t) => t === "the tracer's time for decoding bodies is spent for now").length).toBeGreaterThan(20);
    expect(baseSetup.events.every((e) => e.tags.resp_body_decoded === "br")).toBe(true);
  }, 60_000);

  test("gzip: bodies that inflate a thousandfold stay as sent, at the cost of ordinary ones", async () => {
    const packed = gzipSync(Buffer.alloc(1 << 20, 0x20));
    const plain = Buffer.alloc(packed.length, 0x61);
    const answer = (body: Uint8Array, coding: string) =>
      Buffer.concat([
        Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${coding}Content-Length: ${body.length}\r\n\r\n`),
        body,
      ]);
    const requests = Buffer.from("GET /g HTTP/1.1\r\nHost: a\r\n\r\n".repeat(200));
    const bombSetup = through({ answer: answer(packed, "Content-Encoding: gzip\r\n") });
    const baseSetup = through({ answer: answer(plain, "") });
    const { bombMs, baseMs } = await compare(
      () => timed(bombSetup, requests),
      () => timed(baseSetup, requests),
    );
    console.log(`200 gzip bombs of ${packed.length} bytes: ${bombMs.toFixed(1)} ms; 200 plain bodies as large: ${baseMs.toFixed(1)} ms`);
    expect(bombMs).toBeLessThan(Math.max(5 * baseMs, baseMs + 200));
    expect(bombSetup.events[0]!.tags.resp_body_not_decoded).toBe("expands over 64 times its size");
    expect(Buffer.from(bombSetup.events[0]!.http_resp_body, "base64")).toEqual(packed);
  }, 60_000);

  test("gRPC: a compressed message that inflates to a megabyte of fields is described by its size", async () => {
    const fields = Buffer.alloc(1 << 20);
    for (let i = 0; i < fields.length; i += 2) fields[i] = 0x08;
    const message = (payload: Uint8Array, compressed: number) => {
      const head = Buffer.alloc(5);
      head[0] = compressed;
      head.writeUInt32BE(payload.length, 1);
      return Buffer.concat([head, payload]);
    };
    const packed = message(gzipSync(fields), 1);
    const plain = message(
      Buffer.alloc(packed.length - 5, 0x61)
        .fill(0x0a, 0, 1)
        .fill(0x7f, 1, 2),
      0,
    );
    const answer = (body: Uint8Array) =>
      Buffer.concat([
        Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nGrpc-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`),
        body,
      ]);
    const requests = Buffer.from(
      "POST /svc/M HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc\r\nContent-Length: 0\r\n\r\n".repeat(100),
    );
    const bombSetup = through({ answer: answer(packed) });
    const baseSetup = through({ answer: answer(plain) });
    const { bombMs, baseMs } = await compare(
      () => timed(bombSetup, requests),
      () => timed(baseSetup, requests),
    );
    console.log(`100 gRPC bombs of ${packed.length} bytes: ${bombMs.toFixed(1)} ms; 100 plain messages as large: ${baseMs.toFixed(1)} ms`);
    expect(bombMs).toBeLessThan(Math.max(5 * baseMs, baseMs + 200));
    expect(bombSetup.events[0]!.tags.resp_grpc).toBe(`<${packed.length - 5} bytes, expands too far>`);
  }, 60_000);
});
