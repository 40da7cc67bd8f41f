import { describe, expect, test } from "bun:test";
import { filterFieldList, keyOf, maxNeedleLength, operatorsOf } from "~/lib/filter/fields.ts";
import { parseFilter } from "~/lib/filter/parse.ts";

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

describe("every field of the filter language", () => {
  test("each field's example parses, and each operator it lists is taken", () => {
    for (const spec of filterFieldList) {
      expect([spec.name, parseFilter(spec.example).ok]).toEqual([spec.name, true]);
      const key = keyOf(spec) === "none" ? "" : spec.kind === "tag" ? '["k"]' : '["x-a"]';
      const value = (op: string) =>
        op === "exists"
          ? ""
          : ["status", "number", "size"].includes(spec.kind)
            ? " 5"
            : spec.kind === "duration"
              ? " 5ms"
              : spec.kind === "flag"
                ? " true"
                : spec.kind === "enum"
                  ? ` "${spec.values?.[0]}"`
                  : spec.kind === "method"
                    ? ' "GET"'
                    : ' "a"';
      for (const op of operatorsOf(spec, key !== "")) {
        const text = `${spec.name}${key} ${op}${value(op)}`;
        expect([text, parseFilter(text).ok]).toEqual([text, true]);
      }
    }
  });

  test("bodies take contains, icontains, matches, == and !=", () => {
    expect(ok('request.body contains "zebra-7781"')).toEqual({
      kind: "compare",
      field: "request.body",
      op: "contains",
      value: "zebra-7781",
      pos: 0,
    });
    expect(ok('response.body ICONTAINS "Quota"')).toMatchObject({ field: "response.body", op: "icontains", value: "Quota" });
    expect(err('request.body startsWith "x"').message).toBe(
      'request.body cannot use "startsWith": use contains, icontains, matches, ==, !=',
    );
  });

  test("a header is named in brackets (any case, kept lower-case); exists takes no value", () => {
    expect(ok('request.headers["X-Request-Id"] == "rid-5521"')).toEqual({
      kind: "compare",
      field: "request.headers",
      key: "x-request-id",
      op: "==",
      value: "rid-5521",
      pos: 0,
    });
    expect(ok('response.headers["set-cookie"] exists')).toMatchObject({ key: "set-cookie", op: "exists", value: "" });
    expect(ok('request.headers[":authority"] endsWith ".test"')).toMatchObject({ key: ":authority" });
    expect(ok('response.headers["trailer:grpc-status"] == "0"')).toMatchObject({ key: "trailer:grpc-status" });
    expect(ok('request.headers icontains "rid-5521"')).toMatchObject({ field: "request.headers", op: "icontains" });
    expect(ok('tags["grpc_status"] == "14"')).toMatchObject({ field: "tags", key: "grpc_status", value: "14" });
  });

  test("! negates a condition or a group", () => {
    expect(ok('!request.headers["authorization"] exists')).toEqual({
      kind: "not",
      expr: { kind: "compare", field: "request.headers", key: "authorization", op: "exists", value: "", pos: 1 },
    });
    expect(ok('!(response.status >= 500 || duration > 1s) && service == "api"')).toMatchObject({
      kind: "and",
      left: { kind: "not", expr: { kind: "or" } },
    });
    expect(ok("response.status != 200")).toMatchObject({ op: "!=" });
  });

  test("sizes take units, flags true or false, enums their values, numbers whole numbers", () => {
    expect(ok("response.body_size > 1.5KiB")).toMatchObject({ value: 1536 });
    expect(ok("request.content_length >= 2MB")).toMatchObject({ value: 2_000_000 });
    expect(ok("bytes_sent < 512")).toMatchObject({ value: 512 });
    expect(ok("response.body_truncated == TRUE")).toMatchObject({ value: true });
    expect(ok('direction == "Outbound"')).toMatchObject({ value: "outbound" });
    expect(ok('protocol != "tcp"')).toMatchObject({ value: "tcp" });
    expect(ok("timing.wait > 20ms")).toMatchObject({ value: 20_000 });
    expect(err("response.body_size > 10 apples").message).toMatch(/expected "&&" or "\|\|"/);
    expect(err("response.body_size > 10pb").message).toBe('unknown size unit "pb": use B, KB, KiB, MB, MiB, GB or GiB');
    expect(err("request.body_truncated == yes").message).toBe('expected true or false, found "yes"');
    expect(err('direction == "sideways"').message).toBe('direction is "inbound" or "outbound", not "sideways"');
    expect(err("process.pid == 1.5").message).toMatch(/expected a whole number/);
  });
});

describe("bad input from the search issue, each with a clear message and its position", () => {
  const cases: Array<[string, string, number]> = [
    ['request.headers["x-request-id" == "a"', 'expected "]" to close the "[" at 15, found "=="', 31],
    [
      "request.headers[x-request-id] == 'a'",
      'expected the header name in quotes, e.g. request.headers["x-request-id"], found "x-request-id"',
      16,
    ],
    ['request.headers.x-request-id == "a"', 'write a header as request.headers["x-request-id"]', 0],
    ['request.header["x-request-id"] == "a"', 'unknown field "request.header": did you mean request.headers?', 0],
    ['request.headers["bad name"] == "a"', '"bad name" is not a header name', 17],
    [
      'request.headers == "a"',
      'request.headers cannot use "==": use contains, icontains, matches (or name one header: request.headers["name"] == …)',
      16,
    ],
    ['tags == "x"', 'name the tag in brackets, e.g. tags["grpc_status"]', 5],
    ['request.url["x"] == "a"', "request.url takes no name in brackets", 11],
    ['request.body contains "unterminated', 'unterminated string: missing closing "', 22],
  ];
  for (const [src, message, position] of cases) {
    test(src, () => {
      expect(err(src)).toEqual({ message, position });
    });
  }

  test("a 5,000-character needle is refused by the filter's length before anything is searched; a long one by the needle limit", () => {
    expect(err(`request.body contains "${"n".repeat(5000)}"`)).toEqual({ message: "filter longer than 4096 characters", position: 4096 });
    const long = "n".repeat(maxNeedleLength + 1);
    expect(err(`request.body contains "${long}"`)).toEqual({
      message: `a body search is at most ${maxNeedleLength} characters`,
      position: 22,
    });
    expect(err(`request.headers["x"] == "${long}"`).message).toBe(`a header search is at most ${maxNeedleLength} characters`);
    expect(ok(`request.body contains "${"n".repeat(maxNeedleLength)}"`)).toMatchObject({ op: "contains" });
  });
});
