import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import type { Socket, TCPSocketListener } from "bun";
import { hostMetadata } from "~/agent/event.ts";
import { startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { parseHostEnvironment } from "~/lib/server/env.ts";
import { rng } from "../../support/rng.ts";
import { cat, my, pg, resp } from "../parse/db-wire.ts";
import { connection, fakeProcess, host } from "../parse/helpers.ts";

/**
 * Database conversations through the real relay with the tracer watching: every message written in random pieces, with
 * pauses so the pieces arrive as separate reads, both ways. Each side receives exactly the bytes the other sent, and the
 * tracer records the same calls as when it is handed the conversation whole.
 */
type Turn = [isClient: boolean, bytes: Uint8Array];

const enc = new TextEncoder();
const conversations: Record<string, Turn[]> = {
  postgresql: [
    [true, pg.startup({ user: "app", database: "shop" })],
    [false, cat(pg.authSasl())],
    [true, pg.password("client-first")],
    [false, cat(pg.authOk(), pg.parameterStatus("server_version", "16"), pg.ready())],
    [
      true,
      cat(
        pg.parse("q1", "SELECT * FROM t WHERE id = $1", [23]),
        pg.bind("", "q1", [Uint8Array.of(0, 0, 0, 9)]),
        pg.describe("P", ""),
        pg.execute(),
        pg.sync(),
      ),
    ],
    [false, cat(pg.parseComplete(), pg.bindComplete(), pg.rowDescription("id"), pg.dataRow("9"), pg.complete("SELECT 1"), pg.ready())],
    [true, pg.query("UPDATE t SET a = 2; SELECT missing")],
    [false, cat(pg.complete("UPDATE 4"), pg.error("42703", "no such column"), pg.ready("I"))],
  ],
  mysql: [
    [false, my.greeting()],
    [true, my.handshake("app", "shop", "auth-bytes")],
    [false, my.ok(2)],
    [true, my.query("SELECT id FROM t")],
    [false, cat(my.packet(1, Uint8Array.of(1)), my.column(2, "id"), my.row(3, "1"), my.row(4, "2"), my.okEnd(5))],
    [true, my.prepare("DELETE FROM t WHERE id = ?")],
    [false, cat(my.prepareOk(1, 3, 0, 1), my.column(2, "?"))],
    [true, my.execute(3, [my.long(2)])],
    [false, my.ok(1, 1)],
  ],
  redis: [
    [true, enc.encode(resp.command("SET", "k", "v".repeat(3000)) + resp.command("GET", "k") + resp.command("INCR", "n"))],
    [false, enc.encode(resp.ok + resp.bulk("v".repeat(3000)) + resp.int(1))],
    [true, enc.encode(resp.command("HGETALL", "h"))],
    [false, enc.encode(resp.array(resp.bulk("f"), resp.bulk("x")))],
  ],
};

const pieces = (data: Uint8Array, rnd: () => number): Uint8Array[] => {
  const out: Uint8Array[] = [];
  for (let at = 0; at < data.length; ) {
    const n = Math.min(data.length - at, 1 + Math.floor(rnd() * 9));
    out.push(data.subarray(at, at + n));
    at += n;
  }
  return out;
};

async function writeSlowly(write: (b: Uint8Array) => void, data: Uint8Array, rnd: () => number): Promise<void> {
  for (const piece of pieces(data, rnd)) {
    write(piece);
    if (rnd() < 0.5) await Bun.sleep(1);
  }
}

/** A server that plays its side of `turns`: it answers once it has received what the client was to send before. */
function scriptedServer(turns: Turn[], seed: number): { listener: TCPSocketListener<{ got: number }>; received: () => Uint8Array } {
  const chunks: Uint8Array[] = [];
  const rnd = rng(seed);
  let sent = 0;
  let busy = false;
  const needFromClient = (upTo: number) => turns.slice(0, upTo).reduce((n, [isClient, b]) => n + (isClient ? b.length : 0), 0);
  const pump = async (socket: Socket<{ got: number }>) => {
    if (busy) return;
    busy = true;
    while (sent < turns.length) {
      const [isClient, data] = turns[sent]!;
      if (isClient) {
        if (socket.data.got < needFromClient(sent + 1)) break;
        sent++;
        continue;
      }
      await writeSlowly((b) => socket.write(b), data, rnd);
      sent++;
    }
    busy = false;
  };
  const listener = Bun.listen<{ got: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { got: 0 };
        socket.setNoDelay(true);
        void pump(socket);
      },
      data(socket, chunk) {
        chunks.push(new Uint8Array(chunk));
        socket.data.got += chunk.length;
        void pump(socket);
      },
    },
  });
  return { listener, received: () => cat(...chunks) };
}

async function playClient(port: number, turns: Turn[], seed: number): Promise<Uint8Array> {
  const rnd = rng(seed * 7 + 1);
  const chunks: Uint8Array[] = [];
  let got = 0;
  const socket = connect({ port, host: "127.0.0.1", noDelay: true });
  await new Promise((done) => socket.once("connect", done));
  socket.on("data", (d: Buffer) => {
    chunks.push(new Uint8Array(d));
    got += d.length;
  });
  let expected = 0;
  for (const [isClient, data] of turns) {
    if (isClient) await writeSlowly((b) => socket.write(b), data, rnd);
    else {
      expected += data.length;
      const deadline = Date.now() + 10_000;
      while (got < expected && Date.now() < deadline) await Bun.sleep(2);
    }
  }
  socket.end();
  await new Promise((done) => socket.once("close", done));
  return cat(...chunks);
}

/** The calls the tracer records from the conversation handed over whole: what every cut must give too. */
function wholeCalls(turns: Turn[]): string[] {
  const events: TracedEvent[] = [];
  const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess, redact: "keep" });
  const tap = tracer.onOpen(connection(1, "inbound"))!;
  for (const [i, [isClient, data]] of turns.entries()) tap.onData(isClient, data, 1000 + i);
  tap.onClose(2000);
  tracer.flush();
  return events.map(describeCall);
}

const describeCall = (e: TracedEvent) => `${e.protocol} ${e.db_operation} ${e.db_statement} rows=${e.db_rows} error=${e.db_error_code}`;

const events: TracedEvent[] = [];
const tracer = createTracer({
  host: hostMetadata(parseHostEnvironment({})),
  service: "db-fuzz",
  redact: "keep",
  onEvent: (e) => events.push(toTracedEvent(e)),
});
afterAll(() => tracer.flush());

describe("database conversations through the relay, cut into random reads", () => {
  for (const [system, turns] of Object.entries(conversations)) {
    test(`${system}: both sides get every byte, in order; the calls are the same as read whole`, async () => {
      const expectedCalls = wholeCalls(turns);
      expect(expectedCalls.length).toBeGreaterThan(1);
      const toServer = cat(...turns.filter(([isClient]) => isClient).map(([, b]) => b));
      const toClient = cat(...turns.filter(([isClient]) => !isClient).map(([, b]) => b));
      for (let seed = 1; seed <= 6; seed++) {
        const server = scriptedServer(turns, seed);
        const proxy = startReverseProxy({
          listenHost: "127.0.0.1",
          listenPort: 0,
          targetHost: "127.0.0.1",
          targetPort: server.listener.port,
          observer: tracer,
        });
        events.length = 0;
        const received = await playClient(proxy.port, turns, seed);
        await Bun.sleep(20);
        tracer.flush();
        proxy.stop();
        server.listener.stop(true);
        expect(Buffer.compare(Buffer.from(received), Buffer.from(toClient))).toBe(0);
        expect(Buffer.compare(Buffer.from(server.received()), Buffer.from(toServer))).toBe(0);
        expect(events.filter((e) => e.db_system === system).map(describeCall)).toEqual(expectedCalls);
      }
      expect(tracer.stats().tapErrors).toBe(0);
    }, 60_000);
  }
});
