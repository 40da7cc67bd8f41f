import { describe, expect, test } from "bun:test";
import { resp } from "./db-wire.ts";
import { c, chunkings, randomChunker, type Segment, s, trace, whole } from "./helpers.ts";

/** The Redis parser through the tracer: RESP2 and RESP3, pipelines, pushes, pub/sub, secrets. */
const PASSWORD = "redis-pass-9Jq";

const run = (segments: Segment[], chunker = whole, redact: "keep" | "redact" = "keep") =>
  trace(segments, { direction: "outbound", chunker, redact });

describe("Redis", () => {
  test("a pipeline: replies matched to commands in order, with type, size, error", () => {
    const segments = [
      c(
        resp.command("SET", "k", "v") +
          resp.command("INCR", "n") +
          resp.command("GET", "k") +
          resp.command("LPUSH", "k", "x") +
          resp.command("LRANGE", "l", "0", "-1"),
      ),
      s(resp.ok + resp.int(3) + resp.bulk("v")),
      s(resp.error("WRONGTYPE Operation against a key holding the wrong kind of value") + resp.array(resp.bulk("a"), resp.bulk("b"))),
    ];
    for (const chunker of chunkings(segments)) {
      const { events, tracer } = run(segments, chunker);
      expect(
        events.map((e) => [e.db_statement, e.db_operation, e.db_statement_normalized, e.tags.reply, e.db_rows, e.db_error_code]),
      ).toEqual([
        ["SET k v", "SET", "SET k ?", "simple string", -1, ""],
        ["INCR n", "INCR", "INCR n", "integer", -1, ""],
        ["GET k", "GET", "GET k", "bulk string", -1, ""],
        ["LPUSH k x", "LPUSH", "LPUSH k ?", "error", -1, "WRONGTYPE"],
        ["LRANGE l 0 -1", "LRANGE", "LRANGE l ?", "array of 2", 2, ""],
      ]);
      expect(events.map((e) => e.bytes_received)).toEqual([5, 4, 7, 68, 18]);
      expect(tracer.stats()).toMatchObject({ redisCalls: 5, parserGaveUp: 0 });
    }
  });

  test("AUTH and HELLO AUTH never leave the parser, whatever --redact says; the user name is kept", () => {
    const segments = [
      c(resp.command("AUTH", "app", PASSWORD)),
      s(resp.ok),
      c(resp.command("HELLO", "3", "AUTH", "app", PASSWORD, "SETNAME", "api")),
      s(resp.map(resp.bulk("server"), resp.bulk("redis"), resp.bulk("proto"), resp.int(3))),
      c(resp.command("CONFIG", "SET", "requirepass", PASSWORD)),
      s(resp.ok),
    ];
    const { events } = run(segments, whole, "keep");
    expect(events.map((e) => [e.db_statement, e.db_operation, e.db_user])).toEqual([
      ["AUTH app [redacted]", "AUTH", "app"],
      ["HELLO 3 AUTH app [redacted] SETNAME api", "HELLO", "app"],
      ["CONFIG SET requirepass [redacted]", "CONFIG SET", "app"],
    ]);
    expect(JSON.stringify(events)).not.toContain(PASSWORD);
  });

  test("RESP3: pushes between replies are never taken for a command's reply, attributes before a reply are skipped", () => {
    const invalidate = resp.push(resp.bulk("invalidate"), resp.array(resp.bulk("k")));
    const segments = [
      c(resp.command("HELLO", "3")),
      s(resp.map(resp.bulk("proto"), resp.int(3))),
      c(resp.command("GET", "a") + resp.command("GET", "b")),
      s(`${invalidate}${resp.bulk("1")}|1\r\n+ttl\r\n:5\r\n${invalidate}_\r\n`),
    ];
    for (const chunker of [whole, ...Array.from({ length: 12 }, (_, i) => randomChunker(i))]) {
      const { events, tracer } = run(segments, chunker);
      expect(events.map((e) => [e.db_statement, e.tags.reply])).toEqual([
        ["HELLO 3", "map of 1"],
        ["GET a", "bulk string"],
        ["GET b", "null"],
      ]);
      expect(tracer.stats().dbUnrecorded).toBe(2);
    }
  });

  test("pub/sub (RESP2): the SUBSCRIBE is a call, the messages after it are counted without an event each", () => {
    const message = (n: number) => resp.array(resp.bulk("message"), resp.bulk("news"), resp.bulk(`story ${n}`));
    const segments = [
      c(resp.command("SUBSCRIBE", "news", "sport")),
      s(
        resp.array(resp.bulk("subscribe"), resp.bulk("news"), resp.int(1)) +
          resp.array(resp.bulk("subscribe"), resp.bulk("sport"), resp.int(2)),
      ),
      s(Array.from({ length: 50 }, (_, i) => message(i)).join("")),
      c(resp.command("PING")),
      s(resp.array(resp.bulk("pong"), resp.bulk(""))),
    ];
    const { events, tracer } = run(segments, randomChunker(9));
    expect(events.map((e) => [e.db_statement, e.tags.pubsub !== undefined])).toEqual([["SUBSCRIBE news sport", true]]);
    expect(tracer.stats().dbUnrecorded).toBe(1 + 50 + 2);
  });

  test("MONITOR: one call, the server's stream after it counted", () => {
    const segments = [
      c(resp.command("MONITOR")),
      s(resp.ok),
      s('+1700000000.1 [0 127.0.0.1:5] "GET" "k"\r\n+1700000000.2 [0 127.0.0.1:5] "SET" "k" "v"\r\n'),
    ];
    const { events, tracer } = run(segments);
    expect(events.map((e) => e.db_operation)).toEqual(["MONITOR"]);
    expect(tracer.stats().dbUnrecorded).toBe(2);
  });

  test("values under secret-looking keys and fields are redacted with --redact; other values kept", () => {
    const segments = [
      c(
        resp.command("SET", "session:4f1c", "tok-abc", "EX", "60") +
          resp.command("HSET", "user:1", "name", "ann", "password", "pw-1") +
          resp.command("SET", "greeting", "hello"),
      ),
      s(resp.ok + resp.int(2) + resp.ok),
    ];
    const { events } = run(segments, whole, "redact");
    expect(events.map((e) => [e.db_statement, e.db_statement_normalized])).toEqual([
      ["SET session:4f1c [redacted] EX 60", "SET session:? ?"],
      ["HSET user:1 name ann password [redacted]", "HSET user:? ?"],
      ["SET greeting hello", "SET greeting ?"],
    ]);
    expect(JSON.stringify(events)).not.toMatch(/tok-abc|pw-1/);
  });

  test("arguments are cut to the payload limit and counted past the kept ones; a huge value is skipped, not held", () => {
    const big = "x".repeat(200_000);
    const many = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const segments = [c(resp.command("SET", "blob", big) + resp.command("DEL", ...many)), s(resp.ok + resp.int(100))];
    const { events } = trace(segments, { direction: "outbound", payloadLimit: 16, redact: "keep", chunker: randomChunker(4) });
    expect(events[0]!.db_statement).toBe(`SET blob ${"x".repeat(16)}`);
    expect(events[0]!.bytes_sent).toBe(resp.command("SET", "blob", big).length);
    expect(events[1]!.tags.arguments).toBe("101 (first 64 kept)");
  });

  test("not RESP after all: the connection becomes a tcp event, the calls before kept", () => {
    const segments = [c(resp.command("PING")), s("+PONG\r\n"), s("?garbage\r\n")];
    const { events } = run(segments);
    expect(events.map((e) => e.protocol)).toEqual(["db", "tcp"]);
    expect(events[1]!.tags.passthrough).toMatch(/not a RESP reply/);
  });
});
