import { describe, expect, test } from "bun:test";
import {
  binaryForm,
  binaryMarker,
  binaryNeedle,
  byteText,
  headerForm,
  headerValues,
  isBinaryForm,
  jsonText,
  textForm,
} from "~/lib/filter/content.ts";
import { boundedPredicate, compileFilter, filterMeter, filterStepsPerEvent } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent } from "../../support/event-factory.ts";
import { rng } from "../../support/rng.ts";

function matches(filter: string, event: TracedEvent): boolean {
  const r = parseFilter(filter);
  if (!r.ok) throw new Error(r.error.message);
  return compileFilter(r.expr)(event);
}

const utf8 = new TextEncoder();

describe("the search forms", () => {
  test("headers: one `name: value` line each, names lower-cased, in wire order, line breaks in values as spaces", () => {
    const form = headerForm([
      ["X-Request-Id", "rid-5521"],
      ["Set-Cookie", "a=1"],
      ["set-cookie", "b=2\r\nevil: yes"],
    ]);
    expect(form).toBe("\nx-request-id: rid-5521\nset-cookie: a=1\nset-cookie: b=2  evil: yes\n");
    expect(headerValues(form, "set-cookie")).toEqual(["a=1", "b=2  evil: yes"]);
    expect(headerValues(form, "evil")).toEqual([]);
    expect(headerValues(form, "cookie")).toEqual([]);
    expect(headerForm([])).toBe("");
  });

  test("JSON: \\u escapes read as their characters, except those JSON keeps escaped; the rest as sent", () => {
    expect(jsonText('{"city":"Z\\u00fcrich","path":"a\\/b","q":"say \\"hi\\"","nl":"a\\u000ab","bs":"\\u005c"}')).toBe(
      '{"city":"Zürich","path":"a/b","q":"say \\"hi\\"","nl":"a\\u000ab","bs":"\\u005c"}',
    );
    expect(jsonText('{"a": 1}')).toBe('{"a": 1}');
    // Outside strings nothing changes; a document cut at capture is read as far as it goes.
    expect(jsonText('{"k":"\\u00e9\\u')).toBe('{"k":"é\\u');
  });

  test("binary bodies: a marker, then one character per byte; control bytes as pictures", () => {
    const form = binaryForm(new Uint8Array([0x00, 0x41, 0x1f, 0x7f, 0xc3, 0xa9, 0xff]));
    expect(form).toBe(`${binaryMarker}\u2400A\u241f\u2421\u00c3\u00a9\u00ff`);
    expect(isBinaryForm(form)).toBe(true);
    expect(isBinaryForm(textForm("plain"))).toBe(false);
    // Text never starts with the marker, so the two kinds cannot be mistaken for each other.
    expect(textForm(`${binaryMarker}x`)).toBe("\ufffdx");
    expect(binaryNeedle("order-7")).toBe("order-7");
    expect(binaryNeedle("é")).toBe("\u00c3\u00a9");
    expect(byteText(new Uint8Array(100_000).fill(0x61))).toHaveLength(100_000);
  });
});

describe("content fields in the live evaluator", () => {
  const json = tracedEvent({
    search_req_body: '{"order":"zebra-7781","note":"Zürich"}',
    search_resp_body: '{"error":{"code":"QUOTA_EXCEEDED"}}',
    search_req_headers: headerForm([
      ["X-Request-Id", "rid-5521"],
      ["Accept", "application/json"],
      ["Accept", "text/html"],
    ]),
    search_resp_headers: headerForm([["Content-Type", "application/json"]]),
    tags: { grpc_status: "14" },
  });
  const protobuf = tracedEvent({
    search_resp_body: binaryForm(new Uint8Array([0x0a, 0x07, ...utf8.encode("order-7"), 0x12, 0x02, ...utf8.encode("é"), 0x00])),
  });

  test("bodies: contains, icontains, ==, !=, matches", () => {
    expect(matches('request.body contains "zebra-7781"', json)).toBe(true);
    expect(matches('request.body contains "zebra-7782"', json)).toBe(false);
    expect(matches('response.body icontains "quota_exceeded"', json)).toBe(true);
    expect(matches('request.body icontains "ZÜRICH"', json)).toBe(true);
    expect(matches('response.body contains "quota_exceeded"', json)).toBe(false);
    expect(matches('request.body matches "zebra-[0-9]{4}"', json)).toBe(true);
    expect(matches('response.body == "{\\"error\\":{\\"code\\":\\"QUOTA_EXCEEDED\\"}}"', json)).toBe(true);
    expect(matches('response.body != ""', json)).toBe(true);
    expect(matches('request.body == ""', tracedEvent())).toBe(true);
  });

  test("a binary body is searched by its bytes: the needle's UTF-8 bytes; matches reads text bodies only", () => {
    expect(matches('response.body contains "order-7"', protobuf)).toBe(true);
    expect(matches('response.body contains "é"', protobuf)).toBe(true);
    expect(matches('response.body icontains "ORDER-7"', protobuf)).toBe(true);
    expect(matches('response.body contains "order-8"', protobuf)).toBe(false);
    expect(matches('response.body matches "order"', protobuf)).toBe(false);
    // The byte form of a needle is never looked for in text.
    expect(matches('request.body contains "é"', tracedEvent({ search_req_body: "\u00c3\u00a9" }))).toBe(false);
  });

  test("headers: by name (any of them), exists, !=, and all of them as lines", () => {
    expect(matches('request.headers["x-request-id"] == "rid-5521"', json)).toBe(true);
    expect(matches('request.headers["X-REQUEST-ID"] == "rid-5521"', json)).toBe(true);
    expect(matches('request.headers["x-request-id"] == "rid-552"', json)).toBe(false);
    expect(matches('request.headers["accept"] == "text/html"', json)).toBe(true);
    expect(matches('request.headers["accept"] != "text/html"', json)).toBe(false);
    expect(matches('request.headers["accept"] startsWith "application/"', json)).toBe(true);
    expect(matches('request.headers["accept"] endsWith "/html"', json)).toBe(true);
    expect(matches('request.headers["accept"] icontains "JSON"', json)).toBe(true);
    expect(matches('request.headers["accept"] matches "^text/"', json)).toBe(true);
    expect(matches('request.headers["authorization"] exists', json)).toBe(false);
    expect(matches('!request.headers["authorization"] exists', json)).toBe(true);
    expect(matches('request.headers["authorization"] != "x"', json)).toBe(true);
    // A value never runs into the next header.
    expect(matches('request.headers["x-request-id"] contains "accept"', json)).toBe(false);
    expect(matches('request.headers contains "x-request-id: rid-5521"', json)).toBe(true);
    expect(matches('response.headers icontains "CONTENT-TYPE: APPLICATION/JSON"', json)).toBe(true);
  });

  test("tags, absent numbers, direction, flags", () => {
    expect(matches('tags["grpc_status"] == "14"', json)).toBe(true);
    expect(matches('tags["grpc_status"] exists', json)).toBe(true);
    expect(matches('tags["region"] exists', json)).toBe(false);
    const noLength = tracedEvent({ http_req_content_length: -1, timing_connect: -1 });
    expect(matches("request.content_length < 10", noLength)).toBe(false);
    expect(matches("request.content_length != 10", noLength)).toBe(false);
    expect(matches("timing.connect < 1ms", noLength)).toBe(false);
    expect(matches("request.content_length < 10", tracedEvent({ http_req_content_length: 5 }))).toBe(true);
    expect(matches('direction == "outbound"', tracedEvent({ http_is_outgoing: true }))).toBe(true);
    expect(matches('direction == "inbound"', tracedEvent({ http_is_outgoing: true }))).toBe(false);
    expect(matches("response.body_truncated == true", tracedEvent({ http_resp_body_truncated: true }))).toBe(true);
  });
});

describe("content filters on the live step budget", () => {
  test("contains over a 1 MiB body costs a small part of one event's steps; matches looks at the first 64 KiB", () => {
    const big = `${"x".repeat(1024 * 1024 - 20)}needle-at-the-end`;
    const event = tracedEvent({ search_resp_body: big });
    const meter = filterMeter();
    const parsed = parseFilter('response.body contains "needle-at-the-end"');
    if (!parsed.ok) throw new Error(parsed.error.message);
    const predicate = compileFilter(parsed.expr, meter);
    meter.left = filterStepsPerEvent;
    expect(predicate(event)).toBe(true);
    expect(filterStepsPerEvent - meter.left).toBeLessThan(filterStepsPerEvent / 10);

    // The match lies past the first 64 KiB: matches does not see it, within the event's steps.
    expect(boundedPredicate(['response.body matches "needle-at-the-end"'])?.(event)).toBe(false);
    expect(boundedPredicate(['response.body matches "^x+"'])?.(event)).toBe(true);
  });

  test("a hostile pattern over a large body runs out of steps (unknown, so not shown) instead of running on", () => {
    const r = rng(3);
    let s = "";
    for (let i = 0; i < 65_536; i++) s += r() < 0.5 ? "a" : "b";
    const event = tracedEvent({ search_resp_body: s });
    const meter = filterMeter();
    const parsed = parseFilter('response.body matches "[ab]*a[ab]{40}z"');
    if (!parsed.ok) throw new Error(parsed.error.message);
    const predicate = compileFilter(parsed.expr, meter);
    meter.left = filterStepsPerEvent;
    expect(predicate(event)).toBe(false);
    expect(meter.left).toBeLessThan(0);
    expect(meter.ranOutAt).toEqual({ index: 0, position: 0 });
  });
});
