import { describe, expect, test } from "bun:test";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter, parseFilterChips } from "~/lib/filter/parse.ts";
import { compileRegex } from "~/lib/filter/regex.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";

function matches(filter: string, event: TracedEvent): boolean {
  const r = parseFilter(filter);
  if (!r.ok) throw new Error(r.error.message);
  return compileFilter(r.expr)(event);
}

describe("compileFilter over TracedEvent", () => {
  const post500 = makeEvent({
    http_req_method: "POST",
    http_resp_status_code: 503,
    http_req_path: "/api/orders?id=7",
    http_duration: 250_000,
  });
  const get200 = makeEvent({ http_req_method: "GET", http_resp_status_code: 200, http_req_path: "/users/42", http_duration: 900 });

  test("method", () => {
    expect(matches('request.method == "POST"', post500)).toBe(true);
    expect(matches('request.method == "post"', post500)).toBe(true);
    expect(matches('request.method == "POST"', get200)).toBe(false);
    expect(matches('request.method != "POST"', get200)).toBe(true);
  });

  test("status", () => {
    expect(matches("response.status >= 500", post500)).toBe(true);
    expect(matches("response.status >= 500", get200)).toBe(false);
    expect(matches("response.status < 300", get200)).toBe(true);
    expect(matches("response.status == 200", get200)).toBe(true);
    expect(matches("response.status != 200", get200)).toBe(false);
    expect(matches("response.status <= 503", post500)).toBe(true);
    expect(matches("response.status > 503", post500)).toBe(false);
  });

  test("url", () => {
    expect(matches('request.url startsWith "/api/"', post500)).toBe(true);
    expect(matches('request.url endsWith "id=7"', post500)).toBe(true);
    expect(matches('request.url contains "orders"', post500)).toBe(true);
    expect(matches('request.url contains "orders"', get200)).toBe(false);
    expect(matches('request.url == "/users/42"', get200)).toBe(true);
    expect(matches('request.url != "/users/42"', get200)).toBe(false);
    expect(matches('request.url matches "^/users/[0-9]+$"', get200)).toBe(true);
    expect(matches('request.url matches "^/users/[0-9]+$"', post500)).toBe(false);
    expect(matches('request.url matches "orders\\\\?id=\\\\d"', post500)).toBe(true);
  });

  test("WebSocket messages: text, direction and kind; other events have none", () => {
    const order = makeEvent({ protocol: "ws", ws_direction: "client", ws_opcode: "text", ws_message: '{"type":"order","id":7}' });
    const close = makeEvent({ protocol: "ws", ws_direction: "server", ws_opcode: "close", ws_message: "bye" });
    expect([order, close, get200].map((e) => matches('ws.message contains "order"', e))).toEqual([true, false, false]);
    expect([order, close, get200].map((e) => matches('ws.message matches "^\\\\{.type.:.order"', e))).toEqual([true, false, false]);
    expect([order, close, get200].map((e) => matches('ws.direction == "server"', e))).toEqual([false, true, false]);
    expect([order, close, get200].map((e) => matches('ws.opcode != "text"', e))).toEqual([false, true, true]);
    expect(matches('ws.opcode == "close" && ws.message contains "bye"', close)).toBe(true);
  });

  test("tls, its reason and server name, from the event's tags and tls_server_name", () => {
    const decrypted = makeEvent({ tls_server_name: "api.stripe.com", tags: { tls: "decrypted", tls_alpn: "h2" } });
    const pinned = makeEvent({
      protocol: "tcp",
      tls_server_name: "pinned.example.com",
      tags: { tls: "not decrypted", tls_reason: "client rejected the certificate", tls_detail: "alert 42" },
    });
    const plain = makeEvent({ tags: {} });
    expect([decrypted, pinned, plain].map((e) => matches('tls == "decrypted"', e))).toEqual([true, false, false]);
    expect([decrypted, pinned, plain].map((e) => matches('tls != "decrypted"', e))).toEqual([false, true, true]);
    expect([decrypted, pinned, plain].map((e) => matches('tls == "not decrypted"', e))).toEqual([false, true, false]);
    expect(matches('tls.reason == "client rejected the certificate"', pinned)).toBe(true);
    expect(matches('tls.reason contains "certificate"', pinned)).toBe(true);
    expect(matches('tls.reason contains "certificate"', decrypted)).toBe(false);
    expect(matches('tls.reason != "mutual TLS"', plain)).toBe(true);
    expect(matches('tls.server_name endsWith ".stripe.com"', decrypted)).toBe(true);
    expect(matches('tls.server_name startsWith "pinned."', pinned)).toBe(true);
    expect(matches('tls.server_name == "api.stripe.com"', pinned)).toBe(false);
    // A tag inherited from Object.prototype is no tag.
    expect(matches('tls.reason == ""', makeEvent({ tags: Object.create({ tls_reason: "mutual TLS" }) }))).toBe(true);
  });

  test("route: the template ingest gave the event, compared whole or in part", () => {
    const user = makeEvent({ http_req_path: "/users/42?tab=orders", http_route: "/users/{id}" });
    const other = makeEvent({ http_req_path: "/users/me", http_route: "/users/me" });
    expect([user, other].map((e) => matches('request.route == "/users/{id}"', e))).toEqual([true, false]);
    expect([user, other].map((e) => matches('request.route != "/users/{id}"', e))).toEqual([false, true]);
    expect([user, other].map((e) => matches('request.route startsWith "/users/"', e))).toEqual([true, true]);
    expect([user, other].map((e) => matches('request.route endsWith "{id}"', e))).toEqual([true, false]);
    expect([user, other].map((e) => matches('request.route contains "{"', e))).toEqual([true, false]);
  });

  test("response.unanswered finds the requests that got no answer, by reason", () => {
    const aborted = makeEvent({ http_resp_status_code: 0, http_unanswered: "client_aborted", http_duration: 2_000_000 });
    const reset = makeEvent({ http_resp_status_code: 0, http_unanswered: "reset" });
    const answered = makeEvent({ http_unanswered: "" });
    expect([aborted, reset, answered].map((e) => matches('response.unanswered != ""', e))).toEqual([true, true, false]);
    expect([aborted, reset, answered].map((e) => matches('response.unanswered == "client aborted"', e))).toEqual([true, false, false]);
    expect([aborted, reset, answered].map((e) => matches('response.unanswered == ""', e))).toEqual([false, false, true]);
    expect(matches('response.unanswered != "" && duration >= 2s', aborted)).toBe(true);
  });

  test("duration with units against microseconds", () => {
    expect(matches("duration > 200ms", post500)).toBe(true);
    expect(matches("duration > 250ms", post500)).toBe(false);
    expect(matches("duration >= 250ms", post500)).toBe(true);
    expect(matches("duration < 1ms", get200)).toBe(true);
    expect(matches("duration < 900us", get200)).toBe(false);
    expect(matches("duration <= 0.25s", post500)).toBe(true);
  });

  test("boolean structure", () => {
    const f = '(request.method == "GET" && response.status == 200) || (request.url contains "orders" && duration > 1s)';
    expect(matches(f, get200)).toBe(true);
    expect(matches(f, post500)).toBe(false);
    expect(matches('request.method == "GET" || request.method == "POST"', post500)).toBe(true);
  });

  test("chips AND-ed; no chips match everything", () => {
    const none = parseFilterChips([]);
    expect(none.ok && compileFilter(none.expr)(get200)).toBe(true);
    const two = parseFilterChips(['request.method == "GET"', "response.status >= 500"]);
    expect(two.ok && compileFilter(two.expr)(get200)).toBe(false);
  });
});

describe("the regex matcher: RE2 semantics, linear time", () => {
  const cases: Array<[string, string, boolean]> = [
    ["abc", "xxabcxx", true],
    ["^abc", "xabc", false],
    ["abc$", "abcx", false],
    ["^$", "", true],
    ["a|b", "zzb", true],
    ["^(a|b)+$", "abba", true],
    ["^(a|b)+$", "abca", false],
    ["^a{2,3}$", "aaa", true],
    ["^a{2,3}$", "aaaa", false],
    ["^a{2}$", "aa", true],
    ["^a{2,}$", "aaaaaaa", true],
    ["^(?:ab)*c", "ababc", true],
    ["[^/]+\\.json$", "/a/b.json", true],
    ["[^/]+\\.json$", "/a/b.jsonx", false],
    ["\\d\\d", "a1b2", false],
    ["\\d\\d", "a12", true],
    ["\\w+@\\w+", "mail joe@example", true],
    ["\\S\\s\\S", "a b", true],
    ["[a-c-]", "-", true],
    ["a.c", "abc", true],
    ["a.c", "a\nc", false],
    ["colou?r", "color", true],
    ["x*", "", true],
    ["\\x41", "A", true],
    ["é+", "café", true],
    ["a+?b", "aaab", true],
  ];
  for (const [pattern, input, expected] of cases) {
    test(`${pattern} on ${JSON.stringify(input)} is ${expected}`, () => {
      expect(compileRegex(pattern).test(input)).toBe(expected);
      // The subset means the same in JavaScript (and RE2): cross-check against the native engine on safe inputs.
      expect(new RegExp(pattern).test(input)).toBe(expected);
    });
  }

  test("a leading ] in a class is a literal, as in RE2", () => {
    expect(compileRegex("[]a]").test("]")).toBe(true);
  });

  test("pathological patterns on long input finish fast", () => {
    const long = `${"a".repeat(50_000)}!`;
    const hostile = [
      "(a+)+$",
      "(a|a)*$",
      "(a|aa)+$",
      "(a*)*b",
      "a*a*a*a*a*a*a*b",
      "(.*a){20}$",
      "^(([a-z])+.)+[A-Z]([a-z])+$",
      "(\\w+\\s?)*$",
    ];
    for (const pattern of hostile) {
      const re = compileRegex(pattern);
      const t0 = performance.now();
      re.test(long);
      expect(performance.now() - t0).toBeLessThan(500);
    }
  });

  test("a pattern whose DFA would blow up stays bounded by the cache cap", () => {
    // (a|b)*a(a|b){20}: the textbook exponential DFA; the cache restarts instead of growing.
    const re = compileRegex("(a|b)*a(a|b){20}$");
    let s = "";
    for (let i = 0; i < 20_000; i++) s += Math.random() < 0.5 ? "a" : "b";
    const t0 = performance.now();
    const got = re.test(s);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(got).toBe(s[s.length - 21] === "a");
  });

  test("evaluating a hostile regex through a filter on a huge URL is fast", () => {
    const r = parseFilter('request.url matches "(a+)+$"');
    if (!r.ok) throw new Error(r.error.message);
    const pred = compileFilter(r.expr);
    const event = makeEvent({ http_req_path: `/${"a".repeat(1_000_000)}!` });
    const t0 = performance.now();
    expect(pred(event)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(200);
    // Past the cut a match must lie in the prefix: "$" cannot match at the cut, a plain substring still can.
    const prefixOnly = parseFilter('request.url matches "^/a+"');
    expect(prefixOnly.ok && compileFilter(prefixOnly.expr)(event)).toBe(true);
  });
});
