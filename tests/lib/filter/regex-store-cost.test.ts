import { describe, expect, test } from "bun:test";
import { compileRegex, storeRegexCost } from "~/lib/filter/regex.ts";
import { compileWhere, limits } from "~/store/sql/compile.ts";
import { duckdbDialect } from "~/store/sql/dialect.ts";

/** What a `matches` costs a store engine per character: 1 for a small search DFA, the NFA's states otherwise. */
const cost = (pattern: string, steps = 1e9) => storeRegexCost(compileRegex(pattern), { steps });

describe("the store's price of a regular expression", () => {
  test("patterns RE2 runs as a small DFA cost 1, however long", () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}x`).join("|");
    for (const p of [
      "^/api/v1/users/[0-9]+/orders/[0-9a-f]{32}$",
      `(${words})`,
      ".*(error|fail|timeout).*",
      "a{100}",
      "[^/]+/[^/]+$",
      "a.{5}b",
    ]) {
      expect([p, cost(p)]).toEqual([p, 1]);
    }
  });

  test("patterns whose search DFA explodes cost their NFA states", () => {
    expect(cost("[ab]*a[ab]{99}z")).toBe(compileRegex("[ab]*a[ab]{99}z").size);
    expect(cost("a.{50}b")).toBeGreaterThan(50);
  });

  test("finding out is bounded per query: a pattern past the work left is priced as large", () => {
    const budget = { steps: 1000 };
    expect(storeRegexCost(compileRegex("^/api/v1/users/[0-9]+/orders/[0-9a-f]{32}$"), budget)).toBeGreaterThan(1);
    expect(budget.steps).toBeLessThan(0);
  });

  test("compileWhere refuses a query whose patterns cost more than the bound, naming the costly one", () => {
    const where = (patterns: string[]) =>
      compileWhere(
        duckdbDialect,
        {
          filter: { clauses: [], global: { lowerMs: 0, upperMs: 1 } },
          expressions: patterns.map((value, pos) => ({ kind: "compare", field: "request.url", op: "matches", value, pos })),
        },
        { lowerMs: 0, upperMs: 1 },
      );
    const cheap = Array.from({ length: limits.regexCost }, (_, i) => `^/p${i}/[0-9]+$`);
    expect(where(cheap)).toContain("regexp_matches");
    expect(() => where([...cheap, "^/q/[0-9]+$"])).toThrow(`too many regular expressions in one query: at most ${limits.regexCost}`);
    expect(() => where(["a.{50}b"])).toThrow('regular expression "a.{50}b" is too costly to run over stored events');
  });
});
