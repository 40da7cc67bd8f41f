import { describe, expect, test } from "bun:test";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { pg } from "./db-wire.ts";
import { type Chunker, c, chunkings, randomChunker, type Segment, s, trace, whole } from "./helpers.ts";

/** The PostgreSQL parser through the tracer: conversations built by hand, cut into reads every way. */
const SECRET = "scram-client-proof-Zx81";

const login: Segment[] = [
  c(pg.startup({ user: "app", database: "shop", application_name: "api" })),
  s(pg.authSasl()),
  c(pg.password(SECRET)),
  s(pg.msg("R", pg.int32(12), new TextEncoder().encode(`v=${SECRET}`))),
  s(Buffer.concat([pg.authOk(), pg.parameterStatus("server_version", "16.2"), pg.ready()])),
];

const calls = (events: TracedEvent[]) => events.filter((e) => e.protocol === "db");
const brief = (e: TracedEvent) => ({
  statement: e.db_statement,
  operation: e.db_operation,
  rows: e.db_rows,
  error: e.db_error_code,
  parameters: e.db_parameters,
  skipped: e.tags.skipped ?? "",
});

function run(segments: Segment[], chunker: Chunker = whole, redact: "keep" | "redact" = "keep") {
  return trace(segments, { direction: "outbound", chunker, redact });
}

describe("PostgreSQL", () => {
  test("a simple query after a SCRAM login: one call with user, database, rows; the password exchange never kept", () => {
    const segments = [
      ...login,
      c(pg.query("SELECT id FROM users WHERE id = 7")),
      s(Buffer.concat([pg.rowDescription("id"), pg.dataRow("7"), pg.complete("SELECT 1"), pg.ready()])),
    ];
    for (const chunker of chunkings(segments)) {
      const { events, tracer } = run(segments, chunker);
      expect(events.map(brief)).toEqual([
        { statement: "SELECT id FROM users WHERE id = 7", operation: "SELECT", rows: 1, error: "", parameters: [], skipped: "" },
      ]);
      const [e] = events;
      expect([e!.protocol, e!.db_system, e!.db_user, e!.db_name, e!.db_statement_normalized]).toEqual([
        "db",
        "postgresql",
        "app",
        "shop",
        "SELECT id FROM users WHERE id = ?",
      ]);
      expect(JSON.stringify(events)).not.toContain(SECRET);
      expect(tracer.stats()).toMatchObject({ postgresqlCalls: 1, parserGaveUp: 0, tapErrors: 0 });
    }
  });

  test("the extended protocol pipelined: each Execute matched to its result, the ones after an error said to be skipped", () => {
    const segments = [
      ...login,
      c(
        Buffer.concat([
          pg.parse("", "INSERT INTO t (a) VALUES ($1)"),
          pg.bind("", "", ["1"]),
          pg.execute(),
          pg.parse("", "INSERT INTO t (a) VALUES ($1)"),
          pg.bind("", "", ["1"]),
          pg.execute(),
          pg.parse("", "INSERT INTO t (a) VALUES ($1)"),
          pg.bind("", "", ["2"]),
          pg.execute(),
          pg.sync(),
        ]),
      ),
      s(
        Buffer.concat([
          pg.parseComplete(),
          pg.bindComplete(),
          pg.complete("INSERT 0 1"),
          pg.parseComplete(),
          pg.bindComplete(),
          pg.error("23505", 'duplicate key value violates unique constraint "t_a_key"'),
          pg.ready("E"),
        ]),
      ),
    ];
    for (const chunker of [whole, ...Array.from({ length: 20 }, (_, i) => randomChunker(i + 1))]) {
      const { events } = run(segments, chunker);
      expect(events.map(brief)).toEqual([
        { statement: "INSERT INTO t (a) VALUES ($1)", operation: "INSERT", rows: 1, error: "", parameters: [["$1", "1"]], skipped: "" },
        {
          statement: "INSERT INTO t (a) VALUES ($1)",
          operation: "INSERT",
          rows: -1,
          error: "23505",
          parameters: [["$1", "1"]],
          skipped: "",
        },
        {
          statement: "INSERT INTO t (a) VALUES ($1)",
          operation: "INSERT",
          rows: -1,
          error: "",
          parameters: [["$1", "2"]],
          skipped: "not run: an earlier statement of the same pipeline failed",
        },
      ]);
      expect(events[1]!.db_error_message).toBe('duplicate key value violates unique constraint "t_a_key"');
    }
  });

  test("a named statement prepared once is resolved to its text at each later Execute, binary parameters decoded by type", () => {
    const uuid = Uint8Array.from(Buffer.from("0f8fad5bd9cb469fa16570867728950e", "hex"));
    const int4 = Uint8Array.of(0, 0, 1, 0);
    const micros = BigInt(Date.UTC(2026, 0, 2, 3, 4, 5) - Date.UTC(2000, 0, 1)) * 1000n;
    const stamp = new Uint8Array(8);
    new DataView(stamp.buffer).setBigInt64(0, micros);
    const segments = [
      ...login,
      c(
        Buffer.concat([
          pg.parse("get_order", "SELECT * FROM orders WHERE id = $1 AND owner = $2 AND after = $3 AND note = $4", [23, 2950, 1184, 25]),
          pg.describe("S", "get_order"),
          pg.sync(),
        ]),
      ),
      s(Buffer.concat([pg.parseComplete(), pg.paramDescription(23, 2950, 1184, 25), pg.rowDescription("id"), pg.ready()])),
      c(Buffer.concat([pg.bind("", "get_order", [int4, uuid, stamp, null]), pg.execute(), pg.sync()])),
      s(Buffer.concat([pg.bindComplete(), pg.dataRow("256"), pg.dataRow("257"), pg.complete("SELECT 2"), pg.ready()])),
      c(
        Buffer.concat([
          pg.bind("", "get_order", ["9", "0f8fad5b-d9cb-469f-a165-70867728950e", "2026-01-02", "hi"]),
          pg.execute(),
          pg.sync(),
        ]),
      ),
      s(Buffer.concat([pg.bindComplete(), pg.complete("SELECT 0"), pg.ready()])),
    ];
    const { events } = run(segments, randomChunker(5));
    expect(events.map(brief)).toEqual([
      {
        statement: "SELECT * FROM orders WHERE id = $1 AND owner = $2 AND after = $3 AND note = $4",
        operation: "SELECT",
        rows: 2,
        error: "",
        parameters: [
          ["$1", "256"],
          ["$2", "0f8fad5b-d9cb-469f-a165-70867728950e"],
          ["$3", "2026-01-02T03:04:05.000Z"],
          ["$4", "NULL"],
        ],
        skipped: "",
      },
      {
        statement: "SELECT * FROM orders WHERE id = $1 AND owner = $2 AND after = $3 AND note = $4",
        operation: "SELECT",
        rows: 0,
        error: "",
        parameters: [
          ["$1", "9"],
          ["$2", "0f8fad5b-d9cb-469f-a165-70867728950e"],
          ["$3", "2026-01-02"],
          ["$4", "hi"],
        ],
        skipped: "",
      },
    ]);
    expect(events[0]!.tags.prepared).toBe("get_order");
  });

  test("a query string of several statements gives each its outcome; after an error the rest are said not to have run", () => {
    const segments = [
      ...login,
      c(pg.query("BEGIN; UPDATE t SET a = 1; SELECT nope; COMMIT")),
      s(Buffer.concat([pg.complete("BEGIN"), pg.complete("UPDATE 3"), pg.error("42703", 'column "nope" does not exist'), pg.ready("E")])),
    ];
    const { events } = run(segments);
    expect(
      events.map((e) => [e.db_statement, e.db_operation, e.db_rows, e.db_error_code, e.tags.skipped ?? "", e.tags.statement_of_query]),
    ).toEqual([
      ["BEGIN", "BEGIN", -1, "", "", "1 of 4"],
      ["UPDATE t SET a = 1", "UPDATE", 3, "", "", "2 of 4"],
      ["SELECT nope", "SELECT", -1, "42703", "", "3 of 4"],
      ["COMMIT", "COMMIT", -1, "", "not run: an earlier statement of the same query failed", "4 of 4"],
    ]);
  });

  test("COPY FROM STDIN is one call, its data counted in bytes and never kept", () => {
    const segments = [
      ...login,
      c(pg.query("COPY t FROM STDIN")),
      s(pg.copyIn()),
      c(Buffer.concat([pg.copyData("1\tsecret-row\n"), pg.copyData("2\tother\n"), pg.copyDone()])),
      s(Buffer.concat([pg.complete("COPY 2"), pg.ready()])),
    ];
    const { events } = run(segments, randomChunker(2));
    expect(events.map(brief)).toEqual([
      { statement: "COPY t FROM STDIN", operation: "COPY", rows: 2, error: "", parameters: [], skipped: "" },
    ]);
    expect(events[0]!.tags).toMatchObject({ copy: "in", copy_bytes: String("1\tsecret-row\n".length + "2\tother\n".length) });
    expect(JSON.stringify(events)).not.toContain("secret-row");
  });

  test("a refused login is a call of its own with the server's error", () => {
    const segments = [
      c(pg.startup({ user: "app", database: "shop" })),
      s(pg.msg("R", pg.int32(5), Uint8Array.of(1, 2, 3, 4))),
      c(pg.password("md5-wrong")),
      s(pg.error("28P01", 'password authentication failed for user "app"')),
    ];
    const { events } = run(segments);
    expect(events.map((e) => [e.protocol, e.db_operation, e.db_error_code, e.db_user])).toEqual([["db", "CONNECT", "28P01", "app"]]);
    expect(JSON.stringify(events)).not.toContain("md5-wrong");
  });

  test("SSLRequest: answered N, the plaintext session is read; answered S on a connection not decrypted, the event says so", () => {
    const plain = [c(pg.sslRequest()), s("N"), ...login, c(pg.query("SELECT 1")), s(Buffer.concat([pg.complete("SELECT 1"), pg.ready()]))];
    for (const chunker of chunkings(plain.slice(0, 3)))
      expect(calls(run(plain, chunker).events).map((e) => e.db_statement)).toEqual(["SELECT 1"]);
    const tls = [c(pg.sslRequest()), s("S"), c("\x16\x03\x01\x00\x05hello"), s("\x16\x03\x03\x00\x02hi")];
    const { events } = run(tls);
    expect(events).toHaveLength(1);
    expect([events[0]!.protocol, events[0]!.tags.tls, events[0]!.tags.db]).toEqual(["tcp", "not decrypted", "postgresql"]);
  });

  test("calls still waiting when the connection ends are handed on as incomplete", () => {
    const { events } = trace([...login, c(pg.query("SELECT pg_sleep(10)"))], { direction: "outbound", closeError: "ECONNRESET" });
    expect(events.map((e) => [e.db_statement, e.tags.incomplete])).toEqual([
      ["SELECT pg_sleep(10)", "the connection ended (ECONNRESET) before the result"],
    ]);
  });

  test("bytes that are not the protocol turn the connection into a tcp event, the calls before kept, the byte counts exact", () => {
    const segments = [
      ...login,
      c(pg.query("SELECT 1")),
      s(Buffer.concat([pg.complete("SELECT 1"), pg.ready()])),
      s(Uint8Array.of(0x51, 0, 0, 0, 1)),
    ];
    const { events, tracer, clientBytes, serverBytes } = run(segments);
    expect(events.map((e) => e.protocol)).toEqual(["db", "tcp"]);
    expect(events[1]!.tags.passthrough).toMatch(/message length 1 is invalid/);
    expect([events[1]!.bytes_sent, events[1]!.bytes_received]).toEqual([clientBytes, serverBytes]);
    expect(tracer.stats().parserGaveUp).toBe(1);
  });

  test("parameters bound to secret-looking columns and literals compared with them are redacted; the rest kept", () => {
    const segments = [
      ...login,
      c(
        Buffer.concat([
          pg.parse("", "UPDATE users SET password_hash = $1, name = $2 WHERE id = $3 AND api_token = 'tok-9'"),
          pg.bind("", "", ["hash-1", "bob", "3"]),
          pg.execute(),
          pg.sync(),
        ]),
      ),
      s(Buffer.concat([pg.parseComplete(), pg.bindComplete(), pg.complete("UPDATE 1"), pg.ready()])),
    ];
    const [e] = run(segments, whole, "redact").events;
    expect(e!.db_parameters).toEqual([
      ["$1", "[redacted]"],
      ["$2", "bob"],
      ["$3", "3"],
    ]);
    expect(e!.db_statement).toBe("UPDATE users SET password_hash = $1, name = $2 WHERE id = $3 AND api_token = '[redacted]'");
    expect(JSON.stringify(e)).not.toContain("tok-9");
    expect(JSON.stringify(e)).not.toContain("hash-1");
  });

  test("a statement sent again (its text's facts kept from the first time) is redacted and normalised the same", () => {
    const update = (hash: string) =>
      c(
        Buffer.concat([
          pg.parse("", "UPDATE users SET password_hash = $1 WHERE id = $2"),
          pg.bind("", "", [hash, "3"]),
          pg.execute(),
          pg.sync(),
        ]),
      );
    const done = s(Buffer.concat([pg.parseComplete(), pg.bindComplete(), pg.complete("UPDATE 1"), pg.ready()]));
    const { events } = run([...login, update("hash-1"), done, update("hash-2"), done], whole, "redact");
    expect(events.map((e) => [e.db_operation, e.db_statement_normalized, e.db_parameters])).toEqual([
      [
        "UPDATE",
        "UPDATE users SET password_hash = $1 WHERE id = $2",
        [
          ["$1", "[redacted]"],
          ["$2", "3"],
        ],
      ],
      [
        "UPDATE",
        "UPDATE users SET password_hash = $1 WHERE id = $2",
        [
          ["$1", "[redacted]"],
          ["$2", "3"],
        ],
      ],
    ]);
    expect(JSON.stringify(events)).not.toContain("hash-2");
  });
});
