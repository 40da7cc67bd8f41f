import { describe, expect, test } from "bun:test";
import { filterLimits, joinFilterChips, parseFilter, parseFilterChips } from "~/lib/filter/parse.ts";

function ok(src: string) {
  const r = parseFilter(src);
  if (!r.ok) throw new Error(`expected ${src} to parse: ${r.error.message} at ${r.error.position}`);
  return r.expr;
}

function err(src: string) {
  const r = parseFilter(src);
  if (r.ok) throw new Error(`expected ${src} to fail`);
  return r.error;
}

describe("parseFilter: the filter language", () => {
  test("method equality with a quoted verb, normalised to upper case", () => {
    expect(ok('request.method == "post"')).toEqual({ kind: "compare", field: "request.method", op: "==", value: "POST", pos: 0 });
    expect(ok("request.method != 'DELETE'")).toMatchObject({ op: "!=", value: "DELETE" });
  });

  test("status with every comparison", () => {
    for (const op of ["==", "!=", "<", ">", "<=", ">="]) {
      expect(ok(`response.status ${op} 404`)).toMatchObject({ field: "response.status", op, value: 404 });
    }
  });

  test("url string operators and equality", () => {
    for (const op of ["startsWith", "endsWith", "contains", "matches", "==", "!="]) {
      expect(ok(`request.url ${op} "/api/"`)).toMatchObject({ field: "request.url", op, value: "/api/" });
    }
    expect(ok('request.url startswith "/a"')).toMatchObject({ op: "startsWith" });
  });

  test("tls is decrypted or not decrypted; its reason and server name are strings", () => {
    expect(ok('tls == "decrypted"')).toEqual({ kind: "compare", field: "tls", op: "==", value: "decrypted", pos: 0 });
    expect(ok("tls != 'Not Decrypted'")).toMatchObject({ field: "tls", op: "!=", value: "not decrypted" });
    for (const op of ["==", "!=", "contains"]) {
      expect(ok(`tls.reason ${op} "mutual TLS"`)).toMatchObject({ field: "tls.reason", op, value: "mutual TLS" });
    }
    for (const op of ["==", "!=", "startsWith", "endsWith", "contains"]) {
      expect(ok(`tls.server_name ${op} "api.example.com"`)).toMatchObject({ field: "tls.server_name", op, value: "api.example.com" });
    }
    expect(err('tls == "yes"')).toEqual({ message: 'tls is "decrypted" or "not decrypted", not "yes"', position: 7 });
    expect(err("tls == decrypted").message).toMatch(/expected "decrypted" or "not decrypted", found "decrypted"/);
    expect(err('tls contains "crypt"').message).toMatch(/tls cannot use "contains": use ==, !=/);
    expect(err("tls.reason startsWith 5").message).toMatch(/expected a quoted string/);
    expect(err("tls.server_name == 443").message).toMatch(/expected a quoted string/);
    expect(err('tls.version == "1.3"').message).toMatch(/unknown field "tls.version"/);
    expect(err('tls.resaon == "x"').message).toBe('unknown field "tls.resaon": did you mean tls.reason?');
  });

  test("a WebSocket message's text, who sent it and its kind, from closed lists", () => {
    expect(ok('ws.message contains "order"')).toEqual({ kind: "compare", field: "ws.message", op: "contains", value: "order", pos: 0 });
    expect(ok('ws.message matches "^\\\\{\\"type\\""')).toMatchObject({ field: "ws.message", op: "matches", value: '^\\{"type"' });
    expect(ok('ws.direction == "Server"')).toMatchObject({ field: "ws.direction", op: "==", value: "server" });
    expect(ok("ws.opcode != 'PING'")).toMatchObject({ field: "ws.opcode", op: "!=", value: "ping" });
    expect(ok('ws.message == "x"')).toMatchObject({ field: "ws.message", op: "==", value: "x" });
    expect(err("ws.message contains 42").message).toMatch(/expected a quoted string, e.g. "order"/);
    expect(err('ws.message matches "(a"').message).toMatch(/\)/);
    expect(err('ws.direction == "up"')).toEqual({ message: 'ws.direction is "client" or "server" or "", not "up"', position: 16 });
    expect(err('ws.opcode == "continuation"').message).toBe(
      'ws.opcode is "text" or "binary" or "close" or "ping" or "pong" or "", not "continuation"',
    );
    expect(err("ws.opcode == text").message).toMatch(/expected "text" or "binary" or "close" or "ping" or "pong" or "", found/);
    expect(err('ws.direction contains "c"').message).toBe('ws.direction cannot use "contains": use ==, !=');
  });

  test("request.route is a quoted route template compared whole or in part", () => {
    for (const op of ["==", "!=", "startsWith", "endsWith", "contains"]) {
      expect(ok(`request.route ${op} "/users/{id}"`)).toMatchObject({ field: "request.route", op, value: "/users/{id}" });
    }
    expect(ok('request.route matches "^/u"')).toMatchObject({ field: "request.route", op: "matches" });
    expect(err("request.route == 42").message).toMatch(/expected a quoted string, e.g. "\/users\/\{id\}", found/);
    expect(err('request.route > "/a"').message).toMatch(/request.route cannot use ">"/);
  });

  test("response.unanswered is one of the reasons a request got no answer, or empty for an answered one", () => {
    expect(ok('response.unanswered != ""')).toEqual({ kind: "compare", field: "response.unanswered", op: "!=", value: "", pos: 0 });
    for (const reason of ["client_aborted", "server_closed", "reset"]) {
      expect(ok(`response.unanswered == "${reason}"`)).toMatchObject({ value: reason });
    }
    // As the --log line writes it.
    expect(ok('response.unanswered == "Client Aborted"')).toMatchObject({ value: "client_aborted" });
    expect(err('response.unanswered == "timeout"')).toEqual({
      message: 'response.unanswered is "client_aborted" or "server_closed" or "reset" or "", not "timeout"',
      position: 23,
    });
    expect(err("response.unanswered == 1").message).toMatch(/expected "client_aborted" or "server_closed"/);
    expect(err('response.unanswered contains "a"').message).toMatch(/response.unanswered cannot use "contains": use ==, !=/);
  });

  test("durations normalise to microseconds, bare numbers are milliseconds", () => {
    expect(ok("duration > 250")).toMatchObject({ op: ">", value: 250_000 });
    expect(ok("duration >= 250ms")).toMatchObject({ value: 250_000 });
    expect(ok("duration < 1.5s")).toMatchObject({ value: 1_500_000 });
    expect(ok("duration <= 800us")).toMatchObject({ value: 800 });
    expect(ok("duration <= 800µs")).toMatchObject({ value: 800 });
  });

  test("&& binds tighter than ||, parentheses group, positions point at each field", () => {
    const src = 'request.method == "GET" || response.status >= 500 && duration > 1s';
    expect(ok(src)).toEqual({
      kind: "or",
      left: { kind: "compare", field: "request.method", op: "==", value: "GET", pos: 0 },
      right: {
        kind: "and",
        left: { kind: "compare", field: "response.status", op: ">=", value: 500, pos: 27 },
        right: { kind: "compare", field: "duration", op: ">", value: 1_000_000, pos: 53 },
      },
    });
    const grouped = ok('(request.method == "GET" || response.status >= 500) && duration > 1s');
    expect(grouped.kind).toBe("and");
  });

  test("string escapes", () => {
    expect(ok('request.url contains "a\\"b\\\\c\\u00e9"')).toMatchObject({ value: 'a"b\\cé' });
    expect(ok('request.url contains "/café/☃/😀"')).toMatchObject({ value: "/café/☃/😀" });
  });
});

describe("parseFilter: errors carry a message and a 0-based position", () => {
  const cases: Array<[string, number, RegExp]> = [
    ["", 0, /empty filter/],
    ["   ", 0, /empty filter/],
    ['request.method == "GET', 18, /unterminated string/],
    ['request.url contains "abc\\q"', 25, /unknown escape/],
    ["request.method == GET", 18, /quoted method/],
    ['request.method == "G E"', 18, /not an HTTP method/],
    ["response.status = 500", 16, /"=="/],
    ['response.status == "500"', 19, /status code/],
    ["response.status == 5.5", 19, /status code/],
    ["duration contains 5", 9, /duration cannot use "contains"/],
    ["duration > 5h", 12, /unknown duration unit "h"/],
    ["duration > fast", 11, /expected a duration/],
    ['request.path == "/"', 0, /unknown field "request.path"/],
    ['request.url like "/"', 12, /expected an operator/],
    ['request.method startsWith "G"', 15, /request.method cannot use "startsWith"/],
    ['request.method == "GET" response.status == 200', 24, /expected "&&" or "\|\|"/],
    ['request.method == "GET" &&', 26, /expected a condition/],
    ['request.method == "GET" & response.status == 1', 24, /"&&"/],
    ['(request.method == "GET"', 24, /expected "\)" to close the "\(" at 0/],
    ['request.method == "GET")', 23, /unexpected "\)"/],
    ["response.status == 200 ☃", 23, /unexpected character "☃"/],
    ['request.url matches "(a"', 21, /missing "\)"/],
    ['request.url matches "(a)\\\\1"', 24, /backreferences/],
    ['request.url matches "a(?=b)"', 22, /lookaround/],
    ['request.url matches "a(?<!b)"', 22, /lookaround/],
    ['request.url matches "a**"', 23, /repeated quantifier/],
    ['request.url matches "a{1,1000}"', 22, /repeat count above 100/],
    ['request.url matches "[z-a]"', 22, /out of order/],
    ['request.url matches "\\\\bword"', 21, /word boundaries/],
  ];
  for (const [src, position, message] of cases) {
    test(JSON.stringify(src), () => {
      const e = err(src);
      expect(e.message).toMatch(message);
      expect(e.position).toBe(position);
    });
  }

  test("regex error positions step over the string's escapes", () => {
    // "\u0041(" decodes to "A(": the regex error is at pattern index 1, i.e. after the 6-character escape.
    const e = err('request.url matches "\\u0041("');
    expect(e.position).toBe(27);
  });
});

describe("parseFilter: hostile input stays bounded", () => {
  test("input over the length limit is refused without parsing", () => {
    const src = `request.url contains "${"a".repeat(1_000_000)}"`;
    const t0 = performance.now();
    const e = err(src);
    expect(performance.now() - t0).toBeLessThan(50);
    expect(e.message).toMatch(/longer than 4096/);
  });

  test("deep nesting is refused with the position of the first too-deep parenthesis", () => {
    const depth = filterLimits.maxDepth + 1;
    const src = `${"(".repeat(depth)}response.status == 200${")".repeat(depth)}`;
    const e = err(src);
    expect(e.message).toMatch(/nested deeper than 32/);
    expect(e.position).toBe(filterLimits.maxDepth);
    expect(parseFilter(`${"(".repeat(32)}response.status == 200${")".repeat(32)}`).ok).toBe(true);
  });

  test("unbalanced parentheses up to the length limit fail fast", () => {
    const t0 = performance.now();
    expect(parseFilter("(".repeat(4096)).ok).toBe(false);
    expect(parseFilter(")".repeat(4096)).ok).toBe(false);
    expect(performance.now() - t0).toBeLessThan(50);
  });

  test("too many clauses are refused", () => {
    const src = Array.from({ length: filterLimits.maxClauses + 1 }, () => "response.status == 1").join(" || ");
    expect(err(src).message).toMatch(/more than 64 conditions/);
  });

  test("garbage bytes and control characters give an error, never a throw", () => {
    for (const src of ["\u0000", "\uffff", "\ud800", "💥 == 1", 'request.url contains "\u0000"', "&&", "||", "()", "== 1"]) {
      const r = parseFilter(src);
      if (src === 'request.url contains "\u0000"') expect(r.ok).toBe(true);
      else expect(r.ok).toBe(false);
    }
  });

  test("over-long patterns are refused", () => {
    expect(err(`request.url matches "${"a".repeat(600)}"`).message).toMatch(/regex longer than 512/);
  });
});

describe("chips", () => {
  test("chips are AND-ed; none means match everything", () => {
    expect(parseFilterChips([])).toEqual({ ok: true, expr: null });
    const r = parseFilterChips(['request.method == "GET"', "response.status >= 500 || duration > 1s"]);
    expect(r.ok && r.expr?.kind).toBe("and");
  });

  test("an error names the chip and the position inside it", () => {
    const r = parseFilterChips(['request.method == "GET"', "response.status >> 1"]);
    expect(r).toEqual({ ok: false, error: { index: 1, position: 17, message: expect.stringMatching(/status/) } });
  });

  test("joinFilterChips gives one expression that parses to the same meaning", () => {
    const text = joinFilterChips(['request.method == "GET"', "response.status >= 500 || duration > 1s"]);
    expect(text).toBe('(request.method == "GET") && (response.status >= 500 || duration > 1s)');
    const joined = parseFilter(text);
    const chips = parseFilterChips(['request.method == "GET"', "response.status >= 500 || duration > 1s"]);
    const strip = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (k, v) => (k === "pos" ? undefined : v)));
    expect(joined.ok && chips.ok && strip(joined.expr)).toEqual(chips.ok ? strip(chips.expr) : null);
  });
});
