import { describe, expect, test } from "bun:test";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { Result } from "~/lib/result.ts";

describe("Result", () => {
  test("a parser's result is one of the two shapes", () => {
    const parsed: Result<object, unknown> = parseFilter("response.status >= 500");
    expect(parsed.ok).toBe(true);
    const refused = parseFilter("response.status >=");
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(Object.keys(refused).sort()).toEqual(["error", "ok"]);
  });
});
