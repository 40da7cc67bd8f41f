import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { gzipSync } from "node:zlib";
import { AppError } from "~/lib/errors.ts";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import {
  type Clause,
  type EndpointRow,
  type EndpointsResult,
  maxRowOffset,
  type QueryBase,
  type RowsQuery,
  rowSortKeys,
} from "~/lib/protocol/query.ts";
import { SearchTexts } from "~/store/search-text.ts";
import type { EventStore } from "~/store/types.ts";
import { asWebSocketMessage, generateEvents, prng } from "./generate.ts";
import { endpointKeyOf, isQuantileOf, matching, newestFirst, referenceEndpoints, referenceHistogram, sortedBy } from "./reference.ts";

/**
 * One suite, every engine: the same generated events go into each store and every answer is checked
 * against a plain TypeScript evaluation of the same query over the same events.
 */
export type ConformanceTarget = {
  name: string;
  open: () => Promise<EventStore>;
  /** Evaluates `SELECT <literal>` on the raw engine and returns the value's bytes as hex. */
  literalHex: (value: Uint8Array) => Promise<string>;
};

const hourMs = 3_600_000;
const endMs = Date.UTC(2026, 0, 10, 12, 0, 0);
const startMs = endMs - 6 * hourMs;
const all = { lowerMs: startMs, upperMs: endMs };

const cmp = (field: FilterExpr extends infer _ ? string : never, op: string, value: string | number): FilterExpr =>
  ({ kind: "compare", field, op, value, pos: 0 }) as FilterExpr;
const and = (left: FilterExpr, right: FilterExpr): FilterExpr => ({
  kind: "and",
  left,
  right,
});
const or = (left: FilterExpr, right: FilterExpr): FilterExpr => ({
  kind: "or",
  left,
  right,
});

async function expectBadRequest(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("BAD_REQUEST");
}

export function runConformance(target: ConformanceTarget): void {
  describe(`event store conformance: ${target.name}`, () => {
    let store: EventStore;
    const ns = randomUUID();
    const other = randomUUID();
    const events = generateEvents({
      count: 3000,
      startMicros: startMs * 1000,
      endMicros: endMs * 1000,
      seed: 7,
    });
    const otherEvents = generateEvents({
      count: 200,
      startMicros: startMs * 1000,
      endMicros: endMs * 1000,
      seed: 99,
    });
    for (const e of otherEvents) e.service = "other-namespace-secret";
    // Some of them WebSocket messages: the same table, other fields.
    for (let i = 5; i < events.length; i += 23) asWebSocketMessage(events[i]!, i);

    beforeAll(async () => {
      store = await target.open();
      await store.insert(ns, events.slice(0, 1700));
      await store.insert(ns, events.slice(1700));
      await store.insert(other, otherEvents);
    }, 60_000);

    afterAll(async () => {
      for (const id of [ns, other]) await store.dropNamespace(id).catch(() => undefined);
      await store.close();
    });

    async function expectRows(query: RowsQuery) {
      const range = query.filter.focus ?? query.filter.global;
      const expected = newestFirst(matching(events, query, range));
      const limit = query.limit ?? 10_000;
      const result = await store.queryRows(ns, query);
      expect(result.actualNumberOfRows).toBe(expected.length);
      expect(result.wasRowLimitExceeded).toBe(expected.length > limit);
      expect(result.data.map((r) => r.event_id)).toEqual(expected.slice(0, limit).map((e) => e.event_id));
      expect(result.durationInNanoseconds).toBeGreaterThan(0);
      return { result, expected };
    }

    test("rows come newest first with the spec columns and exact values", async () => {
      const { result, expected } = await expectRows({
        filter: { clauses: [], global: all },
        limit: 100,
      });
      expect(result.wasRowLimitExceeded).toBe(true);
      expect(result.actualNumberOfRows).toBe(3000);
      expect(result.meta).toContain("http_resp_status_code");
      const first = expected[0]!;
      const row = result.data[0]!;
      for (const column of result.meta) expect(row[column as keyof typeof row] as unknown).toEqual(first[column as keyof TracedEvent]);
    });

    test("rows can be narrowed to chosen columns; unknown columns are refused", async () => {
      const r = await store.queryRows(ns, {
        filter: { clauses: [], global: all },
        limit: 20,
        columns: ["http_resp_status_code", "http_req_path"],
      });
      expect(r.meta).toEqual(["time", "event_id", "http_req_path", "http_resp_status_code"]);
      const expected = newestFirst(events).slice(0, 20);
      expect(r.data).toEqual(
        expected.map((e) => ({
          time: e.time,
          event_id: e.event_id,
          http_req_path: e.http_req_path,
          http_resp_status_code: e.http_resp_status_code,
        })),
      );
      await expectBadRequest(
        store.queryRows(ns, {
          filter: { clauses: [], global: all },
          columns: ["http_req_body" as "time"],
        }),
      );
    });

    test("rows come from the focus range when one is set", async () => {
      const focus = {
        lowerMs: startMs + 2 * hourMs,
        upperMs: startMs + 3 * hourMs,
      };
      const { expected } = await expectRows({
        filter: { clauses: [], global: all, focus },
      });
      expect(expected.length).toBeGreaterThan(100);
      expect(expected.length).toBeLessThan(3000);
    });

    describe("sorted rows", () => {
      const ids = (rows: { event_id: string }[]) => rows.map((r) => r.event_id);

      test("every listed column sorts both ways over the whole range, ties broken by time then event id", async () => {
        for (const key of rowSortKeys) {
          for (const dir of ["asc", "desc"] as const) {
            const r = await store.queryRows(ns, { filter: { clauses: [], global: all }, sort: { key, dir }, limit: 40 });
            expect({ key, dir, ids: ids(r.data) }).toEqual({ key, dir, ids: ids(sortedBy(events, { key, dir }).slice(0, 40)) });
            expect(r.actualNumberOfRows).toBe(3000);
            expect(r.wasRowLimitExceeded).toBe(true);
          }
        }
      });

      test("a sort keeps to the focus and the filters", async () => {
        const focus = { lowerMs: startMs + hourMs, upperMs: startMs + 4 * hourMs };
        const query: RowsQuery = {
          filter: { clauses: [], global: all, focus },
          expressions: [cmp("response.status", ">=", 400)],
          sort: { key: "http_duration", dir: "desc" },
          limit: 25,
        };
        const expected = sortedBy(matching(events, query, focus), { key: "http_duration", dir: "desc" });
        expect(expected.length).toBeGreaterThan(25);
        const r = await store.queryRows(ns, query);
        expect(ids(r.data)).toEqual(ids(expected.slice(0, 25)));
        expect(r.actualNumberOfRows).toBe(expected.length);
      });

      test("offsets page through the whole order without overlap or gap, by time either way and by any column", async () => {
        for (const sort of [
          { key: "time", dir: "desc" },
          { key: "time", dir: "asc" },
          { key: "http_duration", dir: "desc" },
          { key: "http_resp_status_code", dir: "asc" },
        ] as const) {
          const pages: string[] = [];
          for (let offset = 0; offset < 3000; offset += 700) {
            const r = await store.queryRows(ns, { filter: { clauses: [], global: all }, sort, offset, limit: 700 });
            expect(r.actualNumberOfRows).toBe(3000);
            pages.push(...ids(r.data));
          }
          expect({ sort, pages }).toEqual({ sort, pages: ids(sortedBy(events, sort)) });
        }
        const past = await store.queryRows(ns, { filter: { clauses: [], global: all }, offset: 3000, limit: 10 });
        expect(past.data).toEqual([]);
        expect(past.actualNumberOfRows).toBe(3000);
      });

      test("bad sorts and offsets are refused", async () => {
        const filter = { clauses: [], global: all };
        for (const sort of [
          { key: "http_req_body", dir: "asc" },
          { key: "time; DROP TABLE x", dir: "asc" },
          { key: "time", dir: "up" },
          { key: "time", dir: "asc; --" },
          "time",
          null,
        ]) {
          await expectBadRequest(store.queryRows(ns, { filter, sort: sort as RowsQuery["sort"] }));
        }
        for (const offset of [-1, 1.5, maxRowOffset + 1, Number.NaN, "10" as unknown as number]) {
          await expectBadRequest(store.queryRows(ns, { filter, offset }));
        }
      });
    });

    test("time bounds: lower included, upper excluded, to the microsecond", async () => {
      const e = events[1234]!;
      const at = { lowerMs: e.time / 1000, upperMs: e.time / 1000 + 0.001 };
      const r = await store.queryRows(ns, {
        filter: { clauses: [], global: at },
      });
      expect(r.data.map((x) => x.event_id)).toContain(e.event_id);
      const before = await store.queryRows(ns, {
        filter: {
          clauses: [],
          global: { lowerMs: at.lowerMs - 1, upperMs: at.lowerMs },
        },
      });
      expect(before.data.map((x) => x.event_id)).not.toContain(e.event_id);
    });

    const numberCases: Clause[] = [
      {
        type: "Number",
        column: "http_resp_status_code",
        op: "Equals",
        value: 500,
      },
      {
        type: "Number",
        column: "http_resp_status_code",
        op: "NotEquals",
        value: 200,
      },
      {
        type: "Number",
        column: "http_resp_status_code",
        op: "GreaterThanOrEquals",
        value: 400,
      },
      {
        type: "Number",
        column: "http_duration",
        op: "GreaterThan",
        value: 500_000,
      },
      {
        type: "Number",
        column: "http_duration",
        op: "LesserThan",
        value: 5_000,
      },
      {
        type: "Number",
        column: "http_req_content_length",
        op: "LesserThanOrEquals",
        value: -1,
      },
      { type: "Number", column: "http_is_outgoing", op: "Equals", value: 1 },
    ];
    const stringCases: Clause[] = [
      {
        type: "String",
        column: "http_req_method",
        op: "Equals",
        value: "POST",
      },
      { type: "String", column: "service", op: "DoesNotEqual", value: "api" },
      {
        type: "String",
        column: "http_req_path",
        op: "Like",
        value: "/api/users/%/orders",
      },
      {
        type: "String",
        column: "http_req_path",
        op: "NotLike",
        value: "/api/%",
      },
      {
        type: "String",
        column: "http_req_path",
        op: "Like",
        value: "/api/orders/1____",
      },
    ];
    for (const clause of [...numberCases, ...stringCases]) {
      test(`clause ${clause.column} ${clause.op} ${clause.value}`, async () => {
        const { expected } = await expectRows({
          filter: { clauses: [clause], global: all },
        });
        expect(expected.length).toBeGreaterThan(0);
      });
    }

    test("clauses combine with AND", async () => {
      await expectRows({
        filter: { clauses: [numberCases[2]!, stringCases[0]!], global: all },
      });
    });

    const expressionCases: Array<[string, FilterExpr]> = [
      ["method ==", cmp("request.method", "==", "post")],
      ["method !=", cmp("request.method", "!=", "GET")],
      ["status >=", cmp("response.status", ">=", 500)],
      ["status ==", cmp("response.status", "==", 404)],
      ["status <", cmp("response.status", "<", 300)],
      ["url startsWith", cmp("request.url", "startsWith", "/api/users/")],
      ["url endsWith", cmp("request.url", "endsWith", "/items")],
      ["url contains", cmp("request.url", "contains", "page=1")],
      ["url matches", cmp("request.url", "matches", "^/api/orders/[0-9]{3}$")],
      ["duration >", cmp("duration", ">", 250_000)],
      ["duration <=", cmp("duration", "<=", 1_000)],
      ["and/or", or(and(cmp("response.status", ">=", 500), cmp("request.url", "contains", "/api/")), cmp("duration", ">", 1_000_000))],
      ["ws.message contains", cmp("ws.message", "contains", '"symbol":"ACME"')],
      ["ws.message matches", cmp("ws.message", "matches", '^\\{"type":"(quote|order)"')],
      ["ws.message matches non-ASCII", cmp("ws.message", "matches", "h.llo w.rld$")],
      ["ws.direction ==", cmp("ws.direction", "==", "server")],
      ["ws.opcode !=", and(cmp("ws.opcode", "!=", "text"), cmp("ws.direction", "==", "client"))],
      ["ws.opcode == close", cmp("ws.opcode", "==", "close")],
    ];
    for (const [name, expr] of expressionCases) {
      test(`filter expression: ${name}`, async () => {
        const { expected } = await expectRows({
          filter: { clauses: [], global: all },
          expressions: [expr],
        });
        expect(expected.length).toBeGreaterThan(0);
      });
    }

    const filterTexts = [
      'request.method == "POST"',
      'request.method != "get"',
      "response.status >= 500",
      "response.status == 404 || response.status == 429",
      'request.url startsWith "/api/users/" && duration > 100ms',
      'request.url endsWith "/capture"',
      'request.url contains "/orders" && (response.status >= 400 || duration >= 1s)',
      'request.url matches "^/api/(users|orders)/[0-9]+$"',
      "duration < 2ms",
      "duration <= 500us || duration > 2s",
      'tls == "decrypted"',
      'tls != "decrypted"',
      'tls == "not decrypted" && tls.reason == "mutual TLS"',
      'tls.reason contains "certificate"',
      'tls.reason != "mutual TLS" && tls == "not decrypted"',
      'tls.server_name == "api.stripe.com" && tls == "decrypted"',
      'tls.server_name startsWith "api." && tls.server_name endsWith ".com" && tls.server_name contains "stripe"',
      'tls == "decrypted" && response.status >= 500',
      'db.system == "postgresql"',
      'db.system != ""',
      'db.system == "" && request.method == "GET"',
      'db.statement contains "FROM orders"',
      'db.statement matches "^(GET|HSET) [a-z]+:[0-9]+"',
      'db.statement startsWith "UPDATE carts"',
      'db.operation == "insert" || db.operation == "GET"',
      'db.error != "" && db.system == "redis"',
      'db.error startsWith "23"',
      'db.error_message contains "duplicate key"',
      'db.system == "mysql" && duration > 1ms',
      'ws.message contains "order" && ws.direction == "server"',
      'ws.opcode == "binary" || ws.opcode == "ping"',
      'ws.message matches "^[{]\\"type\\":\\"quote" && ws.direction != "server"',
      'response.unanswered != ""',
      'response.unanswered == "client_aborted" && duration > 1ms',
      'response.unanswered == "server closed" || response.unanswered == "reset"',
    ];
    for (const text of filterTexts) {
      test(`parsed filter agrees with the live view's evaluator: ${text}`, async () => {
        const parsed = parseFilter(text);
        if (!parsed.ok) throw new Error(parsed.error.message);
        const live = compileFilter(parsed.expr);
        const expected = newestFirst(events.filter(live));
        const { result } = await expectRows({ filter: { clauses: [], global: all }, expressions: [parsed.expr] });
        expect(result.data.map((r) => r.event_id)).toEqual(expected.map((e) => e.event_id));
        expect(expected.length).toBeGreaterThan(0);
      });
    }

    test("TLS filters read only the event's own tls tags, whatever other tags hold", async () => {
      const crafted = randomUUID();
      const base = events.find((e) => e.http_is_outgoing)!;
      const tagSets: Array<Record<string, string>> = [
        { tls: "decrypted" },
        { note: '","tls":"decrypted' },
        { 'x","tls":"decrypted': "y", tls: "not decrypted", tls_reason: "mutual TLS" },
        { 'a"tls': "decrypted", tls_reason: 'say "hi"\\ ünïcode' },
        { tls_reason: "upstream handshake failed", tls: "not decrypted" },
        {},
      ];
      const craftedEvents = tagSets.map((tags, i) => ({ ...base, event_id: randomUUID(), time: base.time + i, tags }));
      await store.insert(crafted, craftedEvents);
      try {
        for (const text of [
          'tls == "decrypted"',
          'tls == "not decrypted"',
          'tls != "decrypted"',
          'tls.reason == "mutual TLS"',
          'tls.reason == "say \\"hi\\"\\\\ ünïcode"',
          'tls.reason contains "handshake"',
        ]) {
          const parsed = parseFilter(text);
          if (!parsed.ok) throw new Error(parsed.error.message);
          const expected = newestFirst(craftedEvents.filter(compileFilter(parsed.expr)));
          const result = await store.queryRows(crafted, { filter: { clauses: [], global: all }, expressions: [parsed.expr] });
          expect([text, result.data.map((r) => r.event_id)]).toEqual([text, expected.map((e) => e.event_id)]);
          expect(expected.length).toBeGreaterThan(0);
        }
        const decrypted = parseFilter('tls == "decrypted"');
        if (!decrypted.ok) throw new Error(decrypted.error.message);
        expect(craftedEvents.filter(compileFilter(decrypted.expr)).map((e) => e.tags)).toEqual([{ tls: "decrypted" }]);
      } finally {
        await store.dropNamespace(crafted);
      }
    });

    test("patterns outside the safe regex subset, or too costly for the engine to run over stored URLs, are refused", async () => {
      for (const pattern of ["(a)\\1", "(?=x)", "a{1000}", "[", "[ab]*a[ab]{99}z", "a.{50}b"]) {
        await expectBadRequest(
          store.queryRows(ns, {
            filter: { clauses: [], global: all },
            expressions: [cmp("request.url", "matches", pattern)],
          }),
        );
      }
    });

    describe("content search: bodies, headers and tags as the live view reads them", () => {
      const contentNs = randomUUID();
      const texts = new SearchTexts();
      const base = (i: number, overrides: Partial<TracedEvent>): TracedEvent => {
        const e: TracedEvent = {
          ...events[i]!,
          event_id: randomUUID(),
          http_req_headers: [["host", "shop.test"]],
          http_resp_headers: [],
          http_req_body: "",
          http_resp_body: "",
          http_req_content_encoding: "",
          http_resp_content_encoding: "",
          tags: {},
          ...overrides,
        };
        texts.fill(e);
        return e;
      };
      const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");
      const utf8 = (text: string) => new TextEncoder().encode(text);
      const crafted: TracedEvent[] = [
        base(10, {
          http_req_content_type: "application/json",
          http_req_body: b64('{"order":"zebra-7781","city":"Z\\u00fcrich"}'),
          http_req_headers: [
            ["Host", "shop.test"],
            ["X-Request-Id", "rid-5521"],
            ["Accept", "application/json"],
            ["Accept", "text/html"],
          ],
        }),
        base(20, {
          http_resp_content_type: "application/json",
          http_resp_content_encoding: "gzip",
          http_resp_body: b64(gzipSync('{"error":{"code":"QUOTA_EXCEEDED","detail":"École fermée"}}')),
          http_resp_headers: [
            ["Content-Type", "application/json"],
            ["Set-Cookie", "a=1"],
            ["Set-Cookie", "session=abc; HttpOnly"],
            ["trailer:grpc-status", "0"],
          ],
        }),
        base(30, {
          http_resp_content_type: "application/x-protobuf",
          http_resp_body: b64(new Uint8Array([0x0a, 0x07, ...utf8("order-7"), 0x12, 0x02, ...utf8("é"), 0x00, 0x1f, 0xff])),
          tags: { grpc_status: "14", "x.y-z": "dots" },
        }),
        base(40, {
          http_req_content_type: "text/plain; charset=iso-8859-1",
          http_req_body: b64(Buffer.from("café ' \\ \" % _", "latin1")),
          http_resp_content_type: "text/plain",
          http_resp_body: b64("line one\nline 'two' with \\ and \" and % and _ and ÉCOLE"),
          http_req_headers: [["Authorization", "Bearer [REDACTED]"]],
        }),
        base(50, {
          http_resp_content_type: "application/json",
          http_resp_body: b64(`[${'"pad",'.repeat(2000)}"tail-token"]`),
          http_resp_body_truncated: true,
        }),
        base(60, { http_req_body: "", http_resp_body: "" }),
      ];
      beforeAll(async () => {
        await store.insert(contentNs, crafted);
      });
      afterAll(async () => {
        await store.dropNamespace(contentNs).catch(() => undefined);
      });

      const searches = [
        'request.body contains "zebra-7781"',
        'request.body contains "Zürich"',
        'request.body icontains "ZEBRA"',
        'request.body matches "zebra-[0-9]{4}"',
        'response.body contains "QUOTA_EXCEEDED"',
        'response.body icontains "quota_exceeded"',
        'response.body icontains "école"',
        'response.body contains "order-7"',
        'response.body contains "é"',
        'response.body icontains "ORDER-7"',
        'response.body matches "order"',
        'request.body contains "café"',
        'request.body contains "\' \\\\ \\" % _"',
        'response.body contains "% and _"',
        'response.body contains "\\n"',
        'response.body contains "tail-token"',
        'response.body == ""',
        'request.body != ""',
        'request.body == "café \' \\\\ \\" % _"',
        'request.headers["x-request-id"] == "rid-5521"',
        'request.headers["X-Request-ID"] == "rid-5521"',
        'request.headers["x-request-id"] == "rid-552"',
        'request.headers["accept"] == "text/html"',
        'request.headers["accept"] != "text/html"',
        'request.headers["accept"] startsWith "application/"',
        'request.headers["accept"] endsWith "/html"',
        'request.headers["accept"] contains "json"',
        'request.headers["accept"] icontains "JSON"',
        'request.headers["accept"] matches "^text/h"',
        'request.headers["x-request-id"] contains "accept"',
        'request.headers["authorization"] exists',
        '!request.headers["authorization"] exists',
        'response.headers["set-cookie"] contains "session="',
        'response.headers["trailer:grpc-status"] == "0"',
        'request.headers contains "x-request-id: rid-5521"',
        'response.headers icontains "SET-COOKIE: A=1"',
        'request.headers contains "REDACTED"',
        'tags["grpc_status"] == "14"',
        'tags["grpc_status"] exists',
        'tags["x.y-z"] == "dots"',
        'tags["region"] exists',
        'response.body_truncated == true && response.body contains "tail-token"',
        '!(request.body contains "zebra") && request.headers["host"] exists',
      ];
      for (const text of searches) {
        test(`agrees with the live view's evaluator: ${text}`, async () => {
          const parsed = parseFilter(text);
          if (!parsed.ok) throw new Error(parsed.error.message);
          const expected = newestFirst(crafted.filter(compileFilter(parsed.expr))).map((e) => e.event_id);
          const result = await store.queryRows(contentNs, { filter: { clauses: [], global: all }, expressions: [parsed.expr] });
          expect([text, result.data.map((r) => r.event_id)]).toEqual([text, expected]);
        });
      }

      test("the searches above find what they are meant to: a body, a header, a gzip body, binary bytes", () => {
        const count = (text: string) => {
          const parsed = parseFilter(text);
          if (!parsed.ok) throw new Error(parsed.error.message);
          return crafted.filter(compileFilter(parsed.expr)).length;
        };
        expect(searches.filter((text) => count(text) === 0)).toEqual([
          'response.body matches "order"',
          'request.headers["x-request-id"] == "rid-552"',
          'request.headers["x-request-id"] contains "accept"',
          'tags["region"] exists',
        ]);
      });

      test("bad content searches are refused with a message, nothing searched", async () => {
        const refused = async (expr: FilterExpr) => {
          const err = await store.queryRows(contentNs, { filter: { clauses: [], global: all }, expressions: [expr] }).then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(AppError);
          return (err as AppError).message;
        };
        const two = parseFilter('request.body matches "a" || response.body matches "b"');
        if (!two.ok) throw new Error(two.error.message);
        expect(await refused(two.expr)).toMatch(/one per search/);
        expect(await refused(cmp("request.body", "contains", "n".repeat(5000)))).toMatch(/at most 1024 characters/);
        expect(await refused(cmp("response.body", "matches", "a.{50}b"))).toMatch(/too costly/);
        expect(await refused({ ...(cmp("request.headers", "==", "x") as object), key: "x') OR 1=1 --" } as FilterExpr)).toMatch(
          /invalid header name/,
        );
        expect(await refused({ ...(cmp("tags", "==", "x") as object), key: '"]) OR 1=1' } as FilterExpr)).toMatch(/invalid tag name/);
        expect(await refused(cmp("request.body", "startsWith", "x"))).toMatch(/request.body supports/);
      });
    });

    describe("a text body stored once: every body reads back byte for byte and is found", () => {
      const onceNs = randomUUID();
      const texts = new SearchTexts();
      const utf8 = (text: string) => Buffer.from(text, "utf8");
      // Each case's request body is the case; its response body is plain JSON, stored once, so every case also reads
      // a body from its search text.
      const cases: Array<{ name: string; bytes: Uint8Array; type: string; encoding?: string; isCut?: boolean; needle: string }> = [
        { name: "UTF-8 JSON", bytes: utf8('{"order":"once-json-1","city":"Zürich"}'), type: "application/json", needle: "once-json-1" },
        {
          name: "a BOM, CRLF and astral characters",
          bytes: utf8('\ufeff{"note":"once-bom-2 😀 𝔘",\r\n"city":"Zürich"}\r\n'),
          type: "application/json",
          needle: "once-bom-2 😀",
        },
        {
          name: "JSON with \\u escapes (its text differs from its bytes)",
          bytes: utf8('{"city":"Z\\u00fcrich once-esc-3","face":"\\ud83d\\ude00","path":"a\\/b"}'),
          type: "application/json",
          needle: "Zürich once-esc-3",
        },
        {
          name: "a gzip body",
          bytes: gzipSync('{"error":"once-gzip-4"}'),
          type: "application/json",
          encoding: "gzip",
          needle: "once-gzip-4",
        },
        {
          name: "a binary body",
          bytes: new Uint8Array([0x0a, 0x0b, ...utf8("once-bin-5"), 0x00, 0xff, 0xfe, 0x80]),
          type: "application/octet-stream",
          needle: "once-bin-5",
        },
        {
          name: "a body cut in the middle of a character",
          bytes: utf8("once-cut-6 café").subarray(0, 15),
          type: "text/plain",
          isCut: true,
          needle: "once-cut-6",
        },
        { name: "a body cut between characters", bytes: utf8("once-cut-7 ca"), type: "text/plain", isCut: true, needle: "once-cut-7" },
        {
          name: "text with control characters",
          bytes: utf8("once-ctl-8\x00\x01\x1f\x7f\t\f end"),
          type: "text/plain",
          needle: "once-ctl-8",
        },
        {
          name: "Latin-1 text",
          bytes: Buffer.from("once-latin-9 café", "latin1"),
          type: "text/plain; charset=iso-8859-1",
          needle: "once-latin-9 café",
        },
        { name: "an empty body", bytes: new Uint8Array(0), type: "application/json", needle: "" },
      ];
      const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
      const respBody = (i: number) => utf8(`{"ok":true,"case":${i},"word":"réponse-${i}"}`);
      const made = cases.map((c, i) => {
        const e: TracedEvent = {
          ...events[100 + i]!,
          event_id: randomUUID(),
          parent_event_id: "",
          http_req_body: b64(c.bytes),
          http_req_content_type: c.type,
          http_req_content_encoding: c.encoding ?? "",
          http_req_body_truncated: c.isCut === true,
          http_resp_body: b64(respBody(i)),
          http_resp_content_type: "application/json",
          http_resp_content_encoding: "",
          http_resp_body_truncated: false,
          tags: {},
        };
        texts.fill(e);
        return e;
      });
      // Stored before bodies were stored once, or by a server that made no search text: base64 and no search text.
      const old: TracedEvent = {
        ...events[130]!,
        event_id: randomUUID(),
        parent_event_id: "",
        http_req_body: b64(utf8('{"old":"row"}')),
        http_req_content_type: "application/json",
        http_resp_body: b64(utf8("plain old text")),
        search_req_body: "",
        search_resp_body: "",
        search_req_headers: "",
        search_resp_headers: "",
      };
      beforeAll(async () => {
        await store.insert(onceNs, [...made, old]);
      });
      afterAll(async () => {
        await store.dropNamespace(onceNs).catch(() => undefined);
      });

      cases.forEach((c, i) => {
        test(`${c.name}: read back exactly, and found by request.body contains`, async () => {
          const e = made[i]!;
          const detail = await store.getEvent(onceNs, e.event_id);
          const [listed] = await store.getEvents(onceNs, [e.event_id]);
          for (const read of [detail?.event, listed]) {
            expect(Buffer.from(read!.http_req_body, "base64").equals(Buffer.from(c.bytes))).toBe(true);
            expect(read!.http_req_body).toBe(b64(c.bytes));
            expect(read!.http_resp_body).toBe(b64(respBody(i)));
            expect([read!.search_req_body, read!.search_resp_body]).toEqual(["", ""]);
          }
          if (c.needle === "") return;
          const found = await store.queryRows(onceNs, {
            filter: { clauses: [], global: all },
            expressions: [cmp("request.body", "contains", c.needle)],
          });
          expect(found.data.map((r) => r.event_id)).toEqual([e.event_id]);
          const reply = await store.queryRows(onceNs, {
            filter: { clauses: [], global: all },
            expressions: [cmp("response.body", "contains", `réponse-${i}"`)],
          });
          expect(reply.data.map((r) => r.event_id)).toEqual([e.event_id]);
        });
      });

      test("an event stored with its body's base64 and no search text reads back as it was", async () => {
        const read = (await store.getEvent(onceNs, old.event_id))?.event;
        expect(read?.http_req_body).toBe(old.http_req_body);
        expect(read?.http_resp_body).toBe(old.http_resp_body);
      });
    });

    describe("header lists stored once: every list reads back exactly through every read and is found", () => {
      const headersNs = randomUUID();
      const texts = new SearchTexts();
      type Headers = Array<[string, string]>;
      // Each case's request headers are the case (with its x-request-id); its response headers are lower case, so every
      // case also reads a list rebuilt from its lines.
      const cases: Array<{ name: string; headers: Headers; id: string }> = [
        {
          name: "all lower case, an HTTP/2 pseudo-header among them (stored once)",
          headers: [
            [":authority", "api.example.test"],
            ["content-type", "application/json"],
            ["x-request-id", "hdr-once-1"],
            ["accept", "*/*"],
          ],
          id: "hdr-once-1",
        },
        {
          name: "mixed-case names (kept as JSON)",
          headers: [
            ["Content-Type", "application/json"],
            ["X-Request-Id", "hdr-mixed-2"],
          ],
          id: "hdr-mixed-2",
        },
        {
          name: "a value its line would alter (kept as JSON)",
          headers: [
            ["x-request-id", "hdr-crlf-3"],
            ["x-note", "one\r\ntwo"],
          ],
          id: "hdr-crlf-3",
        },
        {
          name: "duplicate names, in their order",
          headers: [
            ["set-cookie", "a=1"],
            ["x-request-id", "hdr-dup-4"],
            ["set-cookie", "b=2"],
            ["set-cookie", "a=1"],
            ["x-empty", ""],
          ],
          id: "hdr-dup-4",
        },
        { name: "an empty list", headers: [], id: "" },
        {
          name: "non-ASCII values, a colon and spaces in values",
          headers: [
            ["x-request-id", "hdr-utf-6"],
            ["x-city", "Zürich 😀 𝔘 ümlaut"],
            ["x-colons", ": a: b :"],
            ["x-spaces", "  padded  "],
          ],
          id: "hdr-utf-6",
        },
        {
          name: "a name with a colon and space in it (kept as JSON)",
          headers: [
            ["x-request-id", "hdr-name-7"],
            ["x-odd: name", "v"],
          ],
          id: "hdr-name-7",
        },
      ];
      const respHeaders = (i: number): Headers => [
        ["content-type", "application/json"],
        ["x-reply", `réponse-${i}`],
      ];
      const made = cases.map((c, i) => {
        const e: TracedEvent = {
          ...events[200 + i]!,
          event_id: randomUUID(),
          parent_event_id: "",
          http_req_headers: c.headers.map(([n, v]) => [n, v]),
          http_resp_headers: respHeaders(i),
          tags: {},
        };
        texts.fill(e);
        return e;
      });
      // A child of the first case: a detail's children are read back too.
      const child: TracedEvent = {
        ...events[220]!,
        event_id: randomUUID(),
        parent_event_id: made[0]!.event_id,
        http_req_headers: [["x-request-id", "hdr-child-8"]],
        http_resp_headers: [["grpc-status", "0"]],
        tags: {},
      };
      texts.fill(child);
      // Stored before header lists were stored once, or by a server that made no search text: JSON and no lines.
      const old: TracedEvent = {
        ...events[221]!,
        event_id: randomUUID(),
        parent_event_id: "",
        http_req_headers: [["x-old", "row"]],
        http_resp_headers: [["content-type", "text/plain"]],
        search_req_body: "",
        search_resp_body: "",
        search_req_headers: "",
        search_resp_headers: "",
      };
      beforeAll(async () => {
        await store.insert(headersNs, [...made, child, old]);
      });
      afterAll(async () => {
        await store.dropNamespace(headersNs).catch(() => undefined);
      });
      const found = async (text: string) => {
        const parsed = parseFilter(text);
        if (!parsed.ok) throw new Error(parsed.error.message);
        const rows = await store.queryRows(headersNs, { filter: { clauses: [], global: all }, expressions: [parsed.expr] });
        return rows.data.map((r) => r.event_id).sort();
      };

      cases.forEach((c, i) => {
        test(`${c.name}: read back exactly, and found by its headers`, async () => {
          const e = made[i]!;
          const detail = await store.getEvent(headersNs, e.event_id);
          const [listed] = await store.getEvents(headersNs, [e.event_id]);
          const [ranged] = await store.getEvents(headersNs, [e.event_id], all);
          for (const read of [detail?.event, listed, ranged]) {
            expect(read!.http_req_headers).toEqual(c.headers);
            expect(read!.http_resp_headers).toEqual(respHeaders(i));
            expect([read!.search_req_headers, read!.search_resp_headers]).toEqual(["", ""]);
          }
          expect(await found(`response.headers["x-reply"] == "réponse-${i}"`)).toEqual([e.event_id]);
          if (c.id === "") return;
          expect(await found(`request.headers["x-request-id"] == "${c.id}"`)).toEqual([e.event_id]);
          expect(await found(`request.headers contains "${c.id}"`)).toEqual([e.event_id]);
          const [name] = c.headers[c.headers.length - 1]!;
          if (!name.includes(" ")) {
            const withName = [...made, child, old].filter((m) => m.http_req_headers.some(([n]) => n.toLowerCase() === name.toLowerCase()));
            expect(await found(`request.headers["${name.toLowerCase()}"] exists`)).toEqual(withName.map((m) => m.event_id).sort());
          }
        });
      });

      test("a detail's children read back exactly", async () => {
        const detail = await store.getEvent(headersNs, made[0]!.event_id);
        expect(detail?.children.map((k) => [k.event_id, k.http_req_headers, k.http_resp_headers])).toEqual([
          [child.event_id, [["x-request-id", "hdr-child-8"]], [["grpc-status", "0"]]],
        ]);
      });

      test("no row page can carry a header column: they are not row columns, so the marker never reaches a list", async () => {
        for (const column of ["http_req_headers", "http_resp_headers"]) {
          await expectBadRequest(
            store.queryRows(headersNs, { filter: { clauses: [], global: all }, columns: [column] } as unknown as RowsQuery),
          );
        }
      });

      test("an event stored with its headers' JSON and no lines reads back as it was", async () => {
        const read = (await store.getEvent(headersNs, old.event_id))?.event;
        expect(read?.http_req_headers).toEqual([["x-old", "row"]]);
        expect(read?.http_resp_headers).toEqual([["content-type", "text/plain"]]);
        const [listed] = await store.getEvents(headersNs, [old.event_id]);
        expect(listed?.http_req_headers).toEqual([["x-old", "row"]]);
      });
    });

    test("several expressions must all hold", async () => {
      await expectRows({
        filter: { clauses: [], global: all },
        expressions: [cmp("request.method", "==", "GET"), cmp("response.status", ">=", 400)],
      });
    });

    test("histogram and first page over a range whose ends fall inside minutes count exactly the events inside it", async () => {
      for (const global of [
        { lowerMs: startMs + 17_250, upperMs: startMs + 3 * hourMs - 42_500 },
        { lowerMs: startMs + 2 * hourMs + 500, upperMs: endMs },
      ]) {
        const q: RowsQuery = { filter: { clauses: [], global, focus: null }, limit: 50 };
        const ref = referenceHistogram(events, q);
        const h = await store.histogram(ns, q);
        expect(h.buckets.map(({ count, serverErrors, clientErrors }) => ({ count, serverErrors, clientErrors }))).toEqual(ref.counts);
        const inRange = matching(events, q, global);
        expect(h.total).toBe(inRange.length);
        const page = await store.queryRows(ns, q);
        expect(page.actualNumberOfRows).toBe(inRange.length);
        expect(page.data.map((r) => r.event_id)).toEqual(
          newestFirst(inRange)
            .slice(0, 50)
            .map((e) => e.event_id),
        );
      }
    });

    test("histogram: the spec's bucket size over exactly the range, with errors counted apart", async () => {
      const queries: QueryBase[] = [
        { filter: { clauses: [], global: all } },
        {
          filter: {
            clauses: [],
            global: { lowerMs: endMs - hourMs, upperMs: endMs },
          },
        },
        {
          filter: {
            clauses: [],
            global: { lowerMs: endMs - 90_000, upperMs: endMs },
          },
        },
        { filter: { clauses: [numberCases[0]!], global: all } },
        {
          filter: { clauses: [], global: all },
          expressions: [cmp("request.url", "contains", "/users/")],
        },
      ];
      for (const q of queries) {
        const h = await store.histogram(ns, q);
        const ref = referenceHistogram(events, q);
        // These ranges start on bucket boundaries: 6 h is 72 of 5 min, 1 h 120 of 30 s, 90 s 90 of 1 s; none past the end.
        expect(h.buckets).toHaveLength((q.filter.global.upperMs - q.filter.global.lowerMs) / h.bucketMs);
        expect(h.buckets).toHaveLength(ref.grid.count);
        expect(h.bucketMs).toBe(ref.grid.bucketMs);
        expect(h.startMs).toBe(ref.grid.startMs);
        expect(
          h.buckets.map(({ count, serverErrors, clientErrors }) => ({
            count,
            serverErrors,
            clientErrors,
          })),
        ).toEqual(ref.counts);
        expect(h.total).toBe(ref.counts.reduce((s, b) => s + b.count, 0));
      }
      expect((await store.histogram(ns, queries[0]!)).bucketMs).toBe(300_000); // 6h -> 5 min buckets
      expect((await store.histogram(ns, queries[1]!)).bucketMs).toBe(30_000); // 1h -> 30 s
      expect((await store.histogram(ns, queries[2]!)).bucketMs).toBe(1_000); // 90 s -> 1 s
    });

    /** Rank error allowed: one value's for exact engines; the sketch's stated error (bench/README.md) for the others. */
    const tolerance = (r: EndpointsResult | { quantiles: string }, n: number) => (r.quantiles === "exact" ? 1 / n : 0.03 + 2 / n);
    const rowKey = (r: EndpointRow) =>
      endpointKeyOf({
        service: r.service,
        http_is_outgoing: r.isOutgoing,
        http_req_host: r.host,
        http_req_method: r.method,
        http_route: r.route,
      });

    /** A row's p50, p95 and p99 are quantiles of its durations within the method's error. */
    const expectPercentilesOf = (r: EndpointsResult, row: EndpointRow, durations: number[]) => {
      for (const [q, value] of [
        [0.5, row.p50],
        [0.95, row.p95],
        [0.99, row.p99],
      ] as const) {
        expect(isQuantileOf(durations, value, q, tolerance(r, durations.length)), `${rowKey(row)} p${q * 100} ${value}`).toBe(true);
      }
    };

    /** The Endpoints rows against the events they should count: counts, errors, bytes and max exactly, percentiles within the method's error. */
    const expectEndpointsOf = (r: EndpointsResult, groups: Map<string, TracedEvent[]>) => {
      expect(new Map(r.rows.map((x) => [rowKey(x), x.requests]))).toEqual(new Map([...groups].map(([k, v]) => [k, v.length])));
      for (const row of r.rows) {
        const list = groups.get(rowKey(row))!;
        const durations = list.map((e) => e.http_duration);
        expect([row.clientErrors, row.serverErrors, row.max, row.bytesIn, row.bytesOut], rowKey(row)).toEqual([
          list.filter((e) => e.http_resp_status_code >= 400 && e.http_resp_status_code < 500).length,
          list.filter((e) => e.http_resp_status_code >= 500).length,
          Math.max(...durations),
          list.reduce((s, e) => s + e.http_req_body_size_bytes_wire, 0),
          list.reduce((s, e) => s + e.http_resp_body_size_bytes_wire, 0),
        ]);
        expectPercentilesOf(r, row, durations);
      }
    };

    describe("endpoints", () => {
      test("one row per service, direction, outgoing host, method and route: counts, errors, bytes, max exact, percentiles within the method's error", async () => {
        const query: QueryBase = { filter: { clauses: [], global: all } };
        const r = await store.endpoints(ns, query);
        const groups = referenceEndpoints(events, query, all);
        expect(r.quantiles).toBe(store.kind === "duckdb" ? "exact" : "approximate");
        expect(r.rows.length).toBe(groups.size);
        expect(r.wasRowLimitExceeded).toBe(false);
        // Busiest first.
        expect(r.rows.map((x) => x.requests)).toEqual([...r.rows.map((x) => x.requests)].sort((a, b) => b - a));
        for (const row of r.rows) {
          const list = groups.get(rowKey(row));
          expect(list, rowKey(row)).toBeDefined();
          const durations = list!.map((e) => e.http_duration);
          expect({
            requests: row.requests,
            clientErrors: row.clientErrors,
            serverErrors: row.serverErrors,
            max: row.max,
            bytesIn: row.bytesIn,
            bytesOut: row.bytesOut,
          }).toEqual({
            requests: list!.length,
            clientErrors: list!.filter((e) => e.http_resp_status_code >= 400 && e.http_resp_status_code < 500).length,
            serverErrors: list!.filter((e) => e.http_resp_status_code >= 500).length,
            max: Math.max(...durations),
            bytesIn: list!.reduce((s, e) => s + e.http_req_body_size_bytes_wire, 0),
            bytesOut: list!.reduce((s, e) => s + e.http_resp_body_size_bytes_wire, 0),
          });
          expectPercentilesOf(r, row, durations);
          expect(row.sparkline).toEqual([]);
        }
        // Outgoing calls are told apart by their host; the program's own requests are not split by theirs.
        expect(r.rows.some((x) => x.isOutgoing && x.host === "api.stripe.com")).toBe(true);
        expect(r.rows.filter((x) => !x.isOutgoing).every((x) => x.host === "")).toBe(true);
        expect(r.rows.map((x) => x.route)).toContain("/api/users/{id}");
      });

      test("a range whose ends fall inside minutes counts exactly the requests inside it, at its edges too", async () => {
        // Ends 17.25 s into a minute and 42.5 s before one, so each edge minute is cut; a whole-request range as well.
        const ranges = [
          { lowerMs: startMs + 2 * hourMs + 17_250, upperMs: endMs - hourMs - 42_500 },
          { lowerMs: startMs + 30_000, upperMs: startMs + 30_000 + 7 * 60_000 },
          { lowerMs: startMs + 1_000, upperMs: startMs + 50_000 },
        ];
        for (const range of ranges) {
          const query: QueryBase = { filter: { clauses: [], global: range } };
          const groups = referenceEndpoints(events, query, range);
          expect(groups.size).toBeGreaterThan(0);
          const r = await store.endpoints(ns, query);
          expectEndpointsOf(r, groups);
          const [whole] = (await store.endpoints(ns, { ...query, isWhole: true })).rows;
          expect(whole!.requests).toBe([...groups.values()].reduce((s, l) => s + l.length, 0));
        }
        // A filter on a range with cut edges: only the matching requests, edges included.
        const range = ranges[0]!;
        const filtered: QueryBase = { filter: { clauses: [], global: range }, expressions: [cmp("response.status", ">=", 400)] };
        expectEndpointsOf(await store.endpoints(ns, filtered), referenceEndpoints(events, filtered, range));
      });

      test("filters and the range narrow it; the limit keeps the busiest and says so", async () => {
        const narrowed: QueryBase = {
          filter: { clauses: [], global: { lowerMs: startMs + hourMs, upperMs: startMs + 3 * hourMs } },
          expressions: [cmp("request.route", "startsWith", "/api/"), cmp("response.status", "<", 500)],
        };
        const r = await store.endpoints(ns, narrowed);
        const groups = referenceEndpoints(events, narrowed, narrowed.filter.global);
        expect(new Map(r.rows.map((x) => [rowKey(x), x.requests]))).toEqual(new Map([...groups].map(([k, v]) => [k, v.length])));
        expect(r.rows.every((x) => x.route.startsWith("/api/") && x.serverErrors === 0)).toBe(true);

        const top = await store.endpoints(ns, { filter: { clauses: [], global: all }, limit: 3 });
        const busiest = [...referenceEndpoints(events, { filter: { clauses: [], global: all } }, all).values()]
          .map((l) => l.length)
          .sort((a, b) => b - a)
          .slice(0, 3);
        expect(top.rows.map((x) => x.requests)).toEqual(busiest);
        expect(top.wasRowLimitExceeded).toBe(true);
      });

      test("rankOfMicros counts each endpoint's requests faster than a duration, exactly", async () => {
        const r = await store.endpoints(ns, {
          filter: { clauses: [], global: all },
          expressions: [cmp("request.route", "==", "/api/users/{id}")],
          rankOfMicros: 20_000,
        });
        const groups = referenceEndpoints(events, { filter: { clauses: [], global: all } }, all);
        expect(r.rows.length).toBeGreaterThan(0);
        for (const row of r.rows) {
          const list = groups.get(rowKey(row))!;
          expect(row.faster).toBe(list.filter((e) => e.http_duration < 20_000).length);
        }
      });

      test("sparklines: each point's p95, null where the endpoint had no requests", async () => {
        const r = await store.endpoints(ns, { filter: { clauses: [], global: all }, sparklinePoints: 12, limit: 5 });
        expect(r.sparklineStartMs).toBe(all.lowerMs);
        expect(r.sparklineStepMs).toBe((all.upperMs - all.lowerMs) / 12);
        const groups = referenceEndpoints(events, { filter: { clauses: [], global: all } }, all);
        for (const row of r.rows) {
          expect(row.sparkline).toHaveLength(12);
          const list = groups.get(rowKey(row))!;
          row.sparkline.forEach((value, i) => {
            const lo = (all.lowerMs + i * r.sparklineStepMs) * 1000;
            const inPoint = list.filter((e) => e.time >= lo && e.time < lo + r.sparklineStepMs * 1000).map((e) => e.http_duration);
            if (inPoint.length === 0) expect(value).toBeNull();
            else expect(isQuantileOf(inPoint, value as number, 0.95, tolerance(r, inPoint.length)), `${rowKey(row)} point ${i}`).toBe(true);
          });
        }
      });

      test("isWhole: one row for every HTTP request the query keeps (what an alert measures); none when nothing matches", async () => {
        const q = { filter: { clauses: [], global: all }, expressions: [cmp("response.status", ">=", 400)], isWhole: true };
        const r = await store.endpoints(ns, q);
        const http = matching(events, q, all).filter((e) => e.protocol === "http");
        const durations = http.map((e) => e.http_duration);
        expect(r.rows).toHaveLength(1);
        const [row] = r.rows;
        expect([row!.service, row!.method, row!.route, row!.host, row!.requests]).toEqual(["", "", "", "", http.length]);
        expect([row!.clientErrors, row!.serverErrors]).toEqual([
          http.filter((e) => e.http_resp_status_code < 500).length,
          http.filter((e) => e.http_resp_status_code >= 500).length,
        ]);
        expect(isQuantileOf(durations, row!.p95, 0.95, tolerance(r, durations.length))).toBe(true);
        const none = await store.endpoints(ns, { ...q, expressions: [cmp("response.status", ">", 998)] });
        expect(none.rows).toEqual([]);
      });

      test("bad options are refused; a namespace without a table has no endpoints", async () => {
        const base = { filter: { clauses: [], global: all } };
        await expectBadRequest(store.endpoints(ns, { ...base, limit: 0 }));
        await expectBadRequest(store.endpoints(ns, { ...base, limit: 1001 }));
        await expectBadRequest(store.endpoints(ns, { ...base, sparklinePoints: 61 }));
        await expectBadRequest(store.endpoints(ns, { ...base, rankOfMicros: -1 }));
        await expectBadRequest(store.endpoints(ns, { ...base, rankOfMicros: "1; DROP TABLE x" as unknown as number }));
        await expectBadRequest(store.endpoints(ns, { ...base, isWhole: "yes" as unknown as boolean }));
        await expectBadRequest(store.endpoints(ns, { filter: { clauses: [], global: { lowerMs: 5, upperMs: 5 } } }));
        expect((await store.endpoints(randomUUID(), base)).rows).toEqual([]);
      });

      test("another namespace's endpoints never show", async () => {
        const r = await store.endpoints(ns, { filter: { clauses: [], global: all } });
        expect(r.rows.some((x) => x.service === "other-namespace-secret")).toBe(false);
        const theirs = await store.endpoints(other, { filter: { clauses: [], global: all } });
        expect(theirs.rows.every((x) => x.service === "other-namespace-secret")).toBe(true);
      });
    });

    test("histogram latency lines: each bucket's p50, p95 and p99 of its HTTP requests, null when it has none", async () => {
      const q = { filter: { clauses: [], global: { lowerMs: endMs - hourMs, upperMs: endMs } }, latency: true };
      const h = await store.histogram(ns, q);
      const ref = referenceHistogram(events, q);
      expect(h.buckets.map((b) => b.count)).toEqual(ref.counts.map((b) => b.count));
      const http = matching(events, q, q.filter.global).filter((e) => e.protocol === "http");
      let checked = 0;
      for (const b of h.buckets) {
        const inBucket = http
          .filter((e) => e.time >= b.timeMs * 1000 && e.time < (b.timeMs + h.bucketMs) * 1000)
          .map((e) => e.http_duration);
        if (inBucket.length === 0) {
          expect([b.p50, b.p95, b.p99]).toEqual([null, null, null]);
          continue;
        }
        checked++;
        const tol = (store.kind === "duckdb" ? 1 : 1.5) / inBucket.length + (store.kind === "duckdb" ? 0 : 0.03);
        for (const [level, value] of [
          [0.5, b.p50],
          [0.95, b.p95],
          [0.99, b.p99],
        ] as const) {
          expect(isQuantileOf(inBucket, value as number, level, tol), `bucket ${b.timeMs} p${level * 100}`).toBe(true);
        }
      }
      expect(checked).toBeGreaterThan(50);
      // Without latency, buckets carry counts only.
      expect((await store.histogram(ns, { filter: q.filter })).buckets[0]).not.toHaveProperty("p50");
    });

    test("an event comes back in full detail with its child events", async () => {
      const parent = events.find((p) => events.filter((c) => c.parent_event_id === p.event_id).length >= 2)!;
      const children = events.filter((c) => c.parent_event_id === parent.event_id);
      const detail = await store.getEvent(ns, parent.event_id);
      expect(detail).not.toBeNull();
      expect(detail!.event).toEqual(parent);
      expect(detail!.children).toEqual([...children].sort((a, b) => a.time - b.time || (a.event_id < b.event_id ? -1 : 1)));
      expect(await store.getEvent(ns, randomUUID())).toBeNull();
      await expectBadRequest(store.getEvent(ns, "x' OR 1=1 --"));
    });

    test("a namespace without a table answers empty instead of failing", async () => {
      const empty = randomUUID();
      const rows = await store.queryRows(empty, {
        filter: { clauses: [], global: all },
      });
      expect(rows.data).toEqual([]);
      const h = await store.histogram(empty, {
        filter: { clauses: [], global: all },
      });
      expect(h.total).toBe(0);
      expect(await store.listNamespaces()).not.toContain(empty);
    });

    test("at most 10000 rows, with the true total", async () => {
      const big = randomUUID();
      const many = generateEvents({
        count: 10_050,
        startMicros: startMs * 1000,
        endMicros: endMs * 1000,
        seed: 3,
        bodyBytes: 8,
      });
      const oldest = newestFirst(many).at(-1)!;
      oldest.http_duration = 3_600_000_000;
      await store.insert(big, many);
      try {
        const r = await store.queryRows(big, {
          filter: { clauses: [], global: all },
        });
        expect(r.data).toHaveLength(10_000);
        expect(r.wasRowLimitExceeded).toBe(true);
        expect(r.actualNumberOfRows).toBe(10_050);
        expect(r.data[0]!.event_id).toBe(newestFirst(many)[0]!.event_id);
        // The slowest request is the oldest one, outside the newest 10,000: a sort on the store still finds it first.
        const slowest = await store.queryRows(big, {
          filter: { clauses: [], global: all },
          sort: { key: "http_duration", dir: "desc" },
          limit: 5,
        });
        expect(slowest.data[0]!.event_id).toBe(oldest.event_id);
        expect(slowest.data.map((row) => row.event_id)).toEqual(
          sortedBy(many, { key: "http_duration", dir: "desc" })
            .slice(0, 5)
            .map((e) => e.event_id),
        );
        expect(r.data.some((row) => row.event_id === oldest.event_id)).toBe(false);
        await expectBadRequest(
          store.queryRows(big, {
            filter: { clauses: [], global: all },
            limit: 10_001,
          }),
        );
      } finally {
        await store.dropNamespace(big);
      }
    }, 60_000);

    describe("isolation", () => {
      test("a namespace never sees another's rows", async () => {
        const r = await store.queryRows(ns, {
          filter: {
            clauses: [
              {
                type: "String",
                column: "service",
                op: "Equals",
                value: "other-namespace-secret",
              },
            ],
            global: all,
          },
        });
        expect(r.actualNumberOfRows).toBe(0);
        const mine = await store.queryRows(other, {
          filter: { clauses: [], global: all },
        });
        expect(mine.actualNumberOfRows).toBe(200);
        expect(await store.getEvent(ns, otherEvents[0]!.event_id)).toBeNull();
      });

      test("crafted values stay values", async () => {
        const otherTable = `events_${other.replaceAll("-", "")}`;
        const attempts = [
          `' UNION ALL SELECT * FROM ${otherTable} --`,
          `'); DROP TABLE ${otherTable}; --`,
          `\\' OR 1=1 --`,
          `%' OR service = 'other-namespace-secret`,
        ];
        for (const value of attempts) {
          for (const op of ["Equals", "DoesNotEqual", "Like", "NotLike"] as const) {
            const r = await store.queryRows(ns, {
              filter: {
                clauses: [{ type: "String", column: "service", op, value }],
                global: all,
              },
              limit: 10,
            });
            for (const row of r.data) expect(row.service).not.toBe("other-namespace-secret");
          }
          const u = await store.queryRows(ns, {
            filter: { clauses: [], global: all },
            expressions: [cmp("request.url", "contains", value)],
          });
          expect(u.actualNumberOfRows).toBe(0);
        }
        const still = await store.queryRows(other, {
          filter: { clauses: [], global: all },
        });
        expect(still.actualNumberOfRows).toBe(200);
      });

      test("column names, operators, ids and table names from a client are refused", async () => {
        const bad = (clause: unknown) =>
          expectBadRequest(
            store.queryRows(ns, {
              filter: { clauses: [clause as Clause], global: all },
            }),
          );
        await bad({
          type: "String",
          column: `service FROM events_${other.replaceAll("-", "")} --`,
          op: "Equals",
          value: "x",
        });
        await bad({
          type: "String",
          column: "http_req_headers",
          op: "Equals",
          value: "x",
        });
        await bad({
          type: "Number",
          column: "1=1 OR time",
          op: "Equals",
          value: 1,
        });
        await bad({
          type: "Number",
          column: "http_duration",
          op: "; DROP",
          value: 1,
        });
        await bad({
          type: "Number",
          column: "http_duration",
          op: "Equals",
          value: "1 OR 1=1",
        });
        await bad({
          type: "String",
          column: "service",
          op: "Equals",
          value: 5,
        });
        await bad({ type: "Raw", sql: "1=1" });
        await expectBadRequest(
          store.queryRows(ns, {
            filter: { clauses: [], global: all },
            expressions: [
              {
                kind: "compare",
                field: "time) OR (1=1",
                op: "==",
                value: 1,
                pos: 0,
              } as unknown as FilterExpr,
            ],
          }),
        );
        await expectBadRequest(
          store.queryRows(ns, {
            filter: { clauses: [], global: all },
            expressions: [cmp("request.url", "matches", "a".repeat(600))],
          }),
        );
        for (const id of [`${ns}; DROP TABLE x`, "../../etc", other.replaceAll("-", ""), `${ns.slice(0, -1)}'`]) {
          await expectBadRequest(store.queryRows(id, { filter: { clauses: [], global: all } }));
          await expectBadRequest(store.insert(id, events.slice(0, 1)));
        }
        await expectBadRequest(
          store.queryRows(ns, {
            filter: {
              clauses: [],
              global: { lowerMs: Number.NaN, upperMs: 1 },
            },
          }),
        );
        await expectBadRequest(
          store.queryRows(ns, {
            filter: { clauses: [], global: { lowerMs: 5, upperMs: 5 } },
          }),
        );
      });
    });

    test("literal fuzz: random text round-trips exactly through insert, select and equality", async () => {
      const rand = prng(42);
      const pieces = [
        "'",
        "''",
        "\\",
        "\\'",
        "\0",
        "\n",
        "\r\n",
        "\t",
        '"',
        "%",
        "_",
        "é",
        "日本",
        "😀",
        "\u202e",
        "\x7f",
        "\u0001",
        "--",
        "/*",
        "$$",
        "?",
        "{x}",
      ];
      const values: string[] = [];
      for (let i = 0; i < 60; i++) {
        let s = "";
        const n = Math.floor(rand() * 20);
        for (let j = 0; j < n; j++) {
          s += rand() < 0.6 ? pieces[Math.floor(rand() * pieces.length)] : String.fromCodePoint(Math.floor(rand() * 0x2ffff) % 0xd800);
        }
        values.push(s);
      }
      values.push("𝔘𝔫𝔦𝔠𝔬𝔡𝔢".repeat(290), "'".repeat(1000), "\\".repeat(999), "\0".repeat(10), "");
      const fuzzNs = randomUUID();
      const base = generateEvents({
        count: values.length,
        startMicros: startMs * 1000,
        endMicros: endMs * 1000,
        seed: 5,
      });
      const inserted = base.map((e, i) => ({
        ...e,
        service: `fuzz-${i}`,
        http_req_path: values[i]!,
        process_command_line: values[i]!,
        http_req_headers: [[values[i]!, values[(i + 1) % values.length]!]] as Array<[string, string]>,
        tags: { [values[i]!]: values[(i + 2) % values.length]! },
      }));
      await store.insert(fuzzNs, inserted);
      try {
        for (const e of inserted) {
          const r = await store.queryRows(fuzzNs, {
            filter: {
              clauses: [
                {
                  type: "String",
                  column: "http_req_path",
                  op: "Equals",
                  value: e.http_req_path,
                },
              ],
              global: all,
            },
          });
          expect(r.data.map((x) => x.service)).toContain(e.service);
          expect(r.data.every((x) => x.http_req_path === e.http_req_path)).toBe(true);
          const d = await store.getEvent(fuzzNs, e.event_id);
          expect(d!.event).toEqual(e);
        }
      } finally {
        await store.dropNamespace(fuzzNs);
      }
    }, 60_000);

    test("lone UTF-16 surrogates (not text) are stored as U+FFFD and stay queryable", async () => {
      const sNs = randomUUID();
      const [e] = generateEvents({ count: 1, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 8 });
      const odd = { ...(e as TracedEvent), http_req_path: "/a\ud800b", service: "x\udc00" };
      await store.insert(sNs, [odd]);
      try {
        const d = await store.getEvent(sNs, odd.event_id);
        expect(d?.event.http_req_path).toBe("/a\ufffdb");
        expect(d?.event.service).toBe("x\ufffd");
        const r = await store.queryRows(sNs, {
          filter: { clauses: [{ type: "String", column: "http_req_path", op: "Equals", value: "/a\ud800b" }], global: all },
        });
        expect(r.actualNumberOfRows).toBe(1);
      } finally {
        await store.dropNamespace(sNs);
      }
    });

    test("literal fuzz: arbitrary bytes (invalid UTF-8 included) round-trip through the engine's literal", async () => {
      const rand = prng(9);
      for (let i = 0; i < 40; i++) {
        const bytes = new Uint8Array(Math.floor(rand() * 64));
        for (let j = 0; j < bytes.length; j++)
          bytes[j] = rand() < 0.3 ? [0, 39, 92, 10, 0xff, 0xc3, 0x80][Math.floor(rand() * 7)]! : Math.floor(rand() * 256);
        expect((await target.literalHex(bytes)).toLowerCase()).toBe(Buffer.from(bytes).toString("hex"));
      }
    });

    test("a namespace deleted and stored to again shows only its new requests in the Endpoints table", async () => {
      const gone = randomUUID();
      const first = generateEvents({ count: 300, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 21 });
      for (const e of first) e.service = "deleted-service";
      await store.insert(gone, first);
      try {
        const q: QueryBase = { filter: { clauses: [], global: all } };
        expect((await store.endpoints(gone, q)).rows.some((r) => r.service === "deleted-service")).toBe(true);
        await store.dropNamespace(gone);
        expect((await store.endpoints(gone, q)).rows).toEqual([]);
        const second = generateEvents({ count: 200, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 22 });
        await store.insert(gone, second);
        expectEndpointsOf(await store.endpoints(gone, q), referenceEndpoints(second, q, all));
      } finally {
        await store.dropNamespace(gone);
      }
    }, 60_000);

    test("retention removes what is older than the cutoff and nothing else", async () => {
      const retNs = randomUUID();
      const old = generateEvents({
        count: 100,
        startMicros: (endMs - 10 * 24 * hourMs) * 1000,
        endMicros: (endMs - 9 * 24 * hourMs) * 1000,
        seed: 11,
      });
      const recent = generateEvents({
        count: 100,
        startMicros: (endMs - 2 * hourMs) * 1000,
        endMicros: endMs * 1000,
        seed: 12,
      });
      // Two requests in the minute the last cutoff falls in, one each side of it.
      const [cutBefore, cutAfter] = recent.filter((e) => e.protocol === "http").slice(40, 42);
      cutBefore!.time = (endMs - hourMs + 10_000) * 1000;
      cutAfter!.time = (endMs - hourMs + 50_000) * 1000;
      await store.insert(retNs, [...old, ...recent]);
      try {
        const wide = { lowerMs: endMs - 30 * 24 * hourMs, upperMs: endMs };
        expect(
          (
            await store.queryRows(retNs, {
              filter: { clauses: [], global: wide },
            })
          ).actualNumberOfRows,
        ).toBe(200);
        await store.applyRetention(retNs, 7, endMs);
        const after = await store.queryRows(retNs, {
          filter: { clauses: [], global: wide },
        });
        if (store.kind === "clickhouse" && after.actualNumberOfRows === 200) return; // native TTL applies at merge time
        expect(after.actualNumberOfRows).toBe(100);
        expect(new Set(after.data.map((r) => r.event_id))).toEqual(new Set(recent.map((e) => e.event_id)));
        const wideQuery: QueryBase = { filter: { clauses: [], global: wide } };
        expectEndpointsOf(await store.endpoints(retNs, wideQuery), referenceEndpoints(recent, wideQuery, wide));
        // A cutoff inside a minute: the requests before it in that minute are gone from the Endpoints table, the ones after stay.
        const cutoff = (endMs - hourMs + 29_500) * 1000;
        await store.deleteOlderThan(retNs, cutoff);
        const left = await store.queryRows(retNs, {
          filter: { clauses: [], global: wide },
        });
        const kept = recent.filter((e) => e.time >= cutoff);
        expect(left.actualNumberOfRows).toBe(kept.length);
        expect(kept).toContain(cutAfter!);
        expect(kept).not.toContain(cutBefore!);
        expectEndpointsOf(await store.endpoints(retNs, wideQuery), referenceEndpoints(kept, wideQuery, wide));
      } finally {
        await store.dropNamespace(retNs);
      }
    }, 60_000);

    test("namespaces are listed from their tables", async () => {
      const listed = await store.listNamespaces();
      expect(listed).toContain(ns);
      expect(listed).toContain(other);
    });
  });
}
