import { describe, expect, test } from "bun:test";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { cat, my } from "./db-wire.ts";
import { c, chunkings, randomChunker, type Segment, s, trace, whole } from "./helpers.ts";

/** The MySQL/MariaDB parser through the tracer: the server speaks first, commands and their answers cut every way. */
const AUTH = "scrambled-password-Q7";

const login = (deprecateEof = true): Segment[] => [
  s(my.greeting(deprecateEof)),
  c(my.handshake("app", "shop", AUTH, deprecateEof)),
  s(my.packet(2, Uint8Array.of(0x01, 0x03))),
  s(my.ok(3)),
];

const brief = (e: TracedEvent) => ({
  statement: e.db_statement,
  operation: e.db_operation,
  rows: e.db_rows,
  error: e.db_error_code,
  parameters: e.db_parameters,
});

const run = (segments: Segment[], chunker = whole) => trace(segments, { direction: "outbound", chunker });

describe("MySQL and MariaDB", () => {
  test("detected from the server's greeting; a query's result set counted; user and database kept, auth data never", () => {
    for (const deprecateEof of [true, false]) {
      const result = deprecateEof
        ? [
            my.packet(1, Uint8Array.of(2)),
            my.column(2, "id"),
            my.column(3, "name"),
            my.row(4, "1", "ann"),
            my.row(5, "2", "bob"),
            my.okEnd(6),
          ]
        : [
            my.packet(1, Uint8Array.of(2)),
            my.column(2, "id"),
            my.column(3, "name"),
            my.eof(4),
            my.row(5, "1", "ann"),
            my.row(6, "2", "bob"),
            my.eof(7),
          ];
      const segments = [...login(deprecateEof), c(my.query("SELECT id, name FROM users LIMIT 2")), s(cat(...result))];
      for (const chunker of chunkings(segments)) {
        const { events, tracer } = run(segments, chunker);
        expect(events.map(brief)).toEqual([
          { statement: "SELECT id, name FROM users LIMIT 2", operation: "SELECT", rows: 2, error: "", parameters: [] },
        ]);
        expect([events[0]!.db_system, events[0]!.db_user, events[0]!.db_name]).toEqual(["mysql", "app", "shop"]);
        expect(JSON.stringify(events)).not.toContain(AUTH);
        expect(tracer.stats()).toMatchObject({ mysqlCalls: 1, parserGaveUp: 0 });
      }
    }
  });

  test("prepare then execute with binary parameters: the statement's text, its values decoded; OK's affected rows", () => {
    const segments = [
      ...login(),
      c(my.prepare("UPDATE users SET name = ? WHERE id = ? AND note = ?")),
      s(cat(my.prepareOk(1, 7, 0, 3), my.column(2, "?"), my.column(3, "?"), my.column(4, "?"))),
      c(my.execute(7, [my.string("zoë"), my.long(42), null])),
      s(my.ok(1, 1)),
      c(my.close(7)),
    ];
    const { events } = run(segments, randomChunker(3));
    expect(events.map(brief)).toEqual([
      { statement: "UPDATE users SET name = ? WHERE id = ? AND note = ?", operation: "PREPARE", rows: -1, error: "", parameters: [] },
      {
        statement: "UPDATE users SET name = ? WHERE id = ? AND note = ?",
        operation: "UPDATE",
        rows: 1,
        error: "",
        parameters: [
          ["?1", "zoë"],
          ["?2", "42"],
          ["?3", "NULL"],
        ],
      },
    ]);
    expect(events[1]!.tags.prepared).toBe("7");
  });

  test("an ERR packet gives the error number, SQLSTATE and message", () => {
    const segments = [
      ...login(),
      c(my.query("INSERT INTO users (id) VALUES (1)")),
      s(my.err(1, 1062, "23000", "Duplicate entry '1' for key 'PRIMARY'")),
    ];
    const [e] = run(segments).events;
    expect([e!.db_error_code, e!.db_error_message, e!.tags.sqlstate, e!.db_operation]).toEqual([
      "1062",
      "Duplicate entry '1' for key 'PRIMARY'",
      "23000",
      "INSERT",
    ]);
  });

  test("several results of one command (multi-statements, procedures) are one call, their rows summed", () => {
    const more = 2 | 8;
    const segments = [
      ...login(),
      c(my.query("CALL report()")),
      s(
        cat(
          my.packet(1, Uint8Array.of(1)),
          my.column(2, "n"),
          my.row(3, "5"),
          my.okEnd(4, more),
          my.packet(5, Uint8Array.of(1)),
          my.column(6, "n"),
          my.row(7, "6"),
          my.row(8, "7"),
          my.okEnd(9, more),
          my.ok(10, 0),
        ),
      ),
    ];
    const [e] = run(segments).events;
    expect([e!.db_rows, e!.tags.results]).toEqual([3, "3"]);
  });

  test("a refused login is a call with the error; a client asking for TLS the relay does not read makes a tcp event saying so", () => {
    const refused = [
      s(my.greeting()),
      c(my.handshake("app", "shop", AUTH)),
      s(my.err(2, 1045, "28000", "Access denied for user 'app'@'localhost'")),
    ];
    expect(run(refused).events.map((e) => [e.db_operation, e.db_error_code])).toEqual([["CONNECT", "1045"]]);
    const tls = [s(my.greeting()), c(my.handshake("", "", "", true, true)), c("\x16\x03\x01\x00\x05hello")];
    const [e] = run(tls).events;
    expect([e!.protocol, e!.tags.tls, e!.tags.db]).toEqual(["tcp", "not decrypted", "mysql"]);
  });

  test("a server that speaks first but is not MySQL (SMTP) stays a tcp event", () => {
    const [e] = run([s("220 mail.example ESMTP\r\n"), c("EHLO me\r\n")]).events;
    expect([e!.protocol, e!.tags.reason]).toEqual(["tcp", "server spoke first"]);
  });
});
