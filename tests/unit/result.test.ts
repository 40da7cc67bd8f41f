import { describe, expect, test } from "bun:test";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { Result } from "~/lib/result.ts";

function half(n: number): Result<{ value: number }> {
  return n % 2 === 0 ? { ok: true, value: n / 2 } : { ok: false, error: `${n} is odd` };
}

describe("Result", () => {
  test("ok narrows to the named fields, not ok to the error", () => {
    const good = half(4);
    const bad = half(3);
    if (!good.ok || bad.ok) throw new Error("unexpected");
    expect(good.value).toBe(2);
    expect(bad.error).toBe("3 is odd");
  });

  test("a parser's result is one of the two shapes", () => {
    const parsed: Result<object, unknown> = parseFilter("response.status >= 500");
    expect(parsed.ok).toBe(true);
    const refused = parseFilter("response.status >=");
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(Object.keys(refused).sort()).toEqual(["error", "ok"]);
  });
});
