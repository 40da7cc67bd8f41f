import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { highlightTerms, markMatches, searchCondition } from "~/lib/filter/search.ts";
import { SearchTexts } from "~/store/search-text.ts";
import { tracedEvent } from "../../support/event-factory.ts";

describe("the search box's condition", () => {
  test("free text becomes bodies-or-headers, any case, and parses", () => {
    const made = searchCondition('  Zebra "7781"\\ ');
    expect(made).toEqual({
      ok: true,
      condition:
        'request.body icontains "Zebra \\"7781\\"\\\\" || response.body icontains "Zebra \\"7781\\"\\\\" || request.headers icontains "Zebra \\"7781\\"\\\\" || response.headers icontains "Zebra \\"7781\\"\\\\"',
    });
    expect(made.ok && parseFilter(made.condition).ok).toBe(true);
  });

  test("empty and over-long text are refused with a message", () => {
    expect(searchCondition("   ")).toEqual({ ok: false, message: "Type some text to search for" });
    const long = searchCondition("x".repeat(5000));
    expect(long.ok).toBe(false);
    expect(!long.ok && long.message).toContain("at most 1,024 characters (this is 5,000)");
  });
});

describe("highlights", () => {
  test("terms come from content conditions that are not negated", () => {
    expect(
      highlightTerms([
        'request.body contains "zebra" || response.body icontains "E1042"',
        'request.headers["x-request-id"] == "rid-5521"',
        '!(response.body contains "hidden")',
        'request.url contains "/api"',
      ]),
    ).toEqual({ body: ["zebra", "E1042"], headers: [{ name: "x-request-id", text: "rid-5521" }] });
    expect(highlightTerms(["request.body contains"])).toEqual({ body: [], headers: [] });
  });

  test("matches are marked in order, any case, longest first where two start together", () => {
    expect(markMatches("Order ZEBRA-7781 and zebra", ["zebra", "zebra-7781"])).toEqual([
      { text: "Order ", isMatch: false },
      { text: "ZEBRA-7781", isMatch: true },
      { text: " and ", isMatch: false },
      { text: "zebra", isMatch: true },
    ]);
    expect(markMatches("nothing here", ["zebra"])).toEqual([{ text: "nothing here", isMatch: false }]);
    expect(markMatches("aaaa", ["a"], 2).filter((p) => p.isMatch)).toHaveLength(2);
  });

  test("what the search box adds finds a body (gzip too) or a header, any case, and nothing else", () => {
    const gzip = new Uint8Array(gzipSync(Buffer.from('{"error":{"code":"E1042"}}')));
    const events = {
      body: tracedEvent({ http_req_body: Buffer.from('{"order":"zebra-7781"}').toString("base64") }),
      header: tracedEvent({ http_req_headers: [["X-Request-Id", "rid-5521"]] }),
      gzip: tracedEvent({ http_resp_content_encoding: "gzip", http_resp_body: Buffer.from(gzip).toString("base64") }),
      none: tracedEvent({}),
    };
    const texts = new SearchTexts();
    for (const e of Object.values(events)) texts.fill(e);
    const found = (text: string) => {
      const made = searchCondition(text);
      if (!made.ok) throw new Error(made.message);
      const parsed = parseFilter(made.condition);
      if (!parsed.ok) throw new Error(parsed.error.message);
      const predicate = compileFilter(parsed.expr);
      return Object.entries(events)
        .filter(([, e]) => predicate(e))
        .map(([name]) => name);
    };
    expect(found("ZEBRA-7781")).toEqual(["body"]);
    expect(found("rid-5521")).toEqual(["header"]);
    expect(found("e1042")).toEqual(["gzip"]);
  });
});
