import { describe, expect, test } from "bun:test";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { rng } from "../../support/rng.ts";
import { cat, my, pg, resp } from "./db-wire.ts";
import { bytes, connection, fakeProcess, host } from "./helpers.ts";

/**
 * The database parsers against mutated and hostile conversations: whatever the bytes, nothing is thrown out of the tap,
 * every byte is counted, every event is well-formed, and memory and time stay bounded by what was received.
 */
type Turn = [boolean, Uint8Array];

const conversations: Turn[][] = [
  [
    [true, pg.startup({ user: "u", database: "d" })],
    [false, cat(pg.authOk(), pg.ready())],
    [true, cat(pg.parse("s", "SELECT $1", [23]), pg.bind("", "s", [Uint8Array.of(0, 0, 0, 1)]), pg.execute(), pg.sync())],
    [false, cat(pg.parseComplete(), pg.bindComplete(), pg.dataRow("1"), pg.complete("SELECT 1"), pg.ready())],
    [true, pg.query("SELECT 1; SELECT 2")],
    [false, cat(pg.complete("SELECT 1"), pg.error("XX000", "boom"), pg.ready())],
  ],
  [
    [false, my.greeting()],
    [true, my.handshake("u", "d", "auth")],
    [false, my.ok(2)],
    [true, my.prepare("SELECT ?")],
    [false, cat(my.prepareOk(1, 1, 1, 1), my.column(2, "?"), my.column(3, "c"))],
    [true, my.execute(1, [my.long(5)])],
    [false, cat(my.packet(1, Uint8Array.of(1)), my.column(2, "c"), my.row(3, "5"), my.okEnd(4))],
    [true, my.query("SELECT 1")],
    [false, my.err(1, 1064, "42000", "syntax")],
  ],
  [
    [true, bytes(resp.command("SET", "k", "v") + resp.command("GET", "k") + resp.command("HELLO", "3"))],
    [false, bytes(`${resp.ok}${resp.bulk("v")}${resp.map(resp.bulk("proto"), resp.int(3))}`)],
    [true, bytes(resp.command("SUBSCRIBE", "c"))],
    [
      false,
      bytes(
        resp.push(resp.bulk("subscribe"), resp.bulk("c"), resp.int(1)) + resp.push(resp.bulk("message"), resp.bulk("c"), resp.bulk("m")),
      ),
    ],
  ],
];

function mutate(input: Uint8Array, rnd: () => number): Uint8Array {
  const out = Array.from(input);
  const edits = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(rnd() * (out.length + 1));
    const op = rnd();
    const special = [0, 0xff, 0xfe, 0x0d, 0x0a, 0x2a, 0x24, 0x7f][Math.floor(rnd() * 8)]!;
    if (op < 0.3) out.splice(at, 1);
    else if (op < 0.6) out.splice(at, 0, rnd() < 0.5 ? special : Math.floor(rnd() * 256));
    else out[at] = special;
  }
  return Uint8Array.from(out);
}

describe("database parsers under fuzz", () => {
  test("mutated conversations, cut at random: no tap error, exact byte counts, well-formed events", () => {
    let calls = 0;
    for (let seed = 1; seed <= 1500; seed++) {
      const rnd = rng(seed);
      const events: TracedEvent[] = [];
      const tracer = createTracer({
        onEvent: (e) => events.push(toTracedEvent(e)),
        host,
        processInfo: fakeProcess,
        payloadLimit: 1 + Math.floor(rnd() * 64),
      });
      const tap = tracer.onOpen(connection(seed, "outbound"))!;
      const conversation = conversations[seed % conversations.length]!;
      let fromClient = 0;
      let fromServer = 0;
      let at = 1000;
      for (const [isClient, turn] of conversation) {
        const data = rnd() < 0.3 ? mutate(turn, rnd) : turn;
        let off = 0;
        while (off < data.length) {
          const n = Math.min(data.length - off, 1 + Math.floor(rnd() * 12));
          at += 3;
          tap.onData(isClient, data.subarray(off, off + n), at);
          off += n;
        }
        if (isClient) fromClient += data.length;
        else fromServer += data.length;
      }
      tap.onClose(at + 1, rnd() < 0.2 ? "reset" : undefined);
      tracer.flush();
      const stats = tracer.stats();
      expect(stats.tapErrors).toBe(0);
      expect([stats.bytesFromClients, stats.bytesFromServers]).toEqual([fromClient, fromServer]);
      for (const e of events) {
        expect(["db", "tcp"]).toContain(e.protocol);
        expect(e.http_duration).toBeGreaterThanOrEqual(0);
        if (e.protocol === "tcp") expect([e.bytes_sent, e.bytes_received]).toEqual([fromClient, fromServer]);
        else calls++;
      }
    }
    expect(calls).toBeGreaterThan(1500);
  });

  test("a peer claiming huge messages is skipped through, never buffered", () => {
    const block = new Uint8Array(1 << 20).fill(0x61);
    const cases: Array<[string, Turn[]]> = [
      // A DataRow of 1 GiB.
      [
        "postgresql",
        [
          [true, pg.startup({ user: "u" })],
          [false, cat(pg.authOk(), pg.ready())],
          [true, pg.query("SELECT big")],
          [false, cat(Uint8Array.of(0x44), pg.int32(0x3fffffff))],
        ],
      ],
      // A bulk string of 512 MiB.
      [
        "redis",
        [
          [true, bytes(resp.command("GET", "big"))],
          [false, bytes(`$${512 * 1024 * 1024}\r\n`)],
        ],
      ],
      // A MySQL row split over 16 MiB packets.
      [
        "mysql",
        [
          [false, my.greeting()],
          [true, my.handshake("u", "d", "a")],
          [false, my.ok(2)],
          [true, my.query("SELECT big")],
          [false, cat(my.packet(1, Uint8Array.of(1)), my.column(2, "c"), Uint8Array.of(0xff, 0xff, 0xff, 3))],
        ],
      ],
    ];
    for (const [system, turns] of cases) {
      const tracer = createTracer({ onEvent: () => {}, host, processInfo: fakeProcess });
      const tap = tracer.onOpen(connection(1, "outbound"))!;
      let at = 1;
      for (const [isClient, data] of turns) tap.onData(isClient, data, at++);
      const before = process.memoryUsage().rss;
      const started = performance.now();
      for (let i = 0; i < 48; i++) tap.onData(false, block, at++);
      expect(performance.now() - started).toBeLessThan(2000);
      expect(process.memoryUsage().rss - before).toBeLessThan(24 * 1024 * 1024);
      tap.onClose(at);
      tracer.flush();
      expect([system, tracer.stats().tapErrors, tracer.stats().parserGaveUp]).toEqual([system, 0, 0]);
    }
  });
});
