import { describe, expect, test } from "bun:test";
import { clauseToFilterText } from "~/lib/filter/clause-text.ts";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { Clause } from "~/lib/protocol/query.ts";
import { tracedEvent } from "../../support/event-factory.ts";

describe("old explorer clauses as the filter language", () => {
  const cases: Array<[Clause, string]> = [
    [{ type: "Number", column: "http_resp_status_code", op: "GreaterThanOrEquals", value: 500 }, "response.status >= 500"],
    [{ type: "Number", column: "http_duration", op: "GreaterThan", value: 250000 }, "duration > 250000us"],
    [{ type: "Number", column: "http_is_outgoing", op: "Equals", value: 1 }, 'direction == "outbound"'],
    [{ type: "Number", column: "http_is_outgoing", op: "NotEquals", value: 1 }, 'direction == "inbound"'],
    [{ type: "String", column: "http_req_method", op: "Equals", value: "POST" }, 'request.method == "POST"'],
    [{ type: "String", column: "http_req_path", op: "Like", value: "%/api/%" }, 'request.url contains "/api/"'],
    [{ type: "String", column: "http_req_path", op: "Like", value: "/api%" }, 'request.url startsWith "/api"'],
    [{ type: "String", column: "http_req_path", op: "NotLike", value: "%.png" }, '!(request.url endsWith ".png")'],
    [{ type: "String", column: "http_req_path", op: "Like", value: "/u_/%.json" }, 'request.url matches "^/u./.*\\\\.json$"'],
    [{ type: "String", column: "service", op: "DoesNotEqual", value: "api" }, 'service != "api"'],
  ];
  for (const [clause, text] of cases) {
    test(`${clause.column} ${clause.op} ${clause.value} → ${text}`, () => {
      expect(clauseToFilterText(clause)).toBe(text);
      expect(parseFilter(text).ok).toBe(true);
    });
  }

  test("a LIKE with _ and % selects what SQL would", () => {
    const text = clauseToFilterText({ type: "String", column: "http_req_path", op: "Like", value: "/u_/%.json" })!;
    const parsed = parseFilter(text);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const p = compileFilter(parsed.expr);
    expect(p(tracedEvent({ http_req_path: "/u1/a/b.json" }))).toBe(true);
    expect(p(tracedEvent({ http_req_path: "/u12/a.json" }))).toBe(false);
    expect(p(tracedEvent({ http_req_path: "/u1/ajson" }))).toBe(false);
  });
});
