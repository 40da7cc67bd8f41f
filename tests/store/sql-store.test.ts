import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { SearchTexts } from "~/store/search-text.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { generateEvents } from "./generate.ts";

const endMs = Date.UTC(2026, 0, 10, 12);
const startMs = endMs - 3_600_000;
const whole = { lowerMs: startMs, upperMs: endMs };

function parsed(text: string): FilterExpr[] {
  const r = parseFilter(text);
  if (!r.ok) throw new Error(r.error.message);
  return [r.expr];
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof AppError ? err.code : String(err);
}

describe("SqlEventStore.countAll, the benchmarks' floor", () => {
  let store: SqlEventStore;
  const ns = randomUUID();

  beforeAll(async () => {
    store = await openDuckDbStore({ path: ":memory:" });
    const events = generateEvents({ count: 60, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 5 });
    const texts = new SearchTexts();
    events.forEach((e, i) => {
      e.http_req_body = Buffer.from(JSON.stringify({ order: i % 20 === 3 ? "zebra-7781" : `ord-${i}` })).toString("base64");
      e.http_req_content_type = "application/json";
      texts.fill(e);
    });
    await store.insert(ns, events);
  });

  afterAll(() => store.close());

  test("counts the rows of a range, and under filter expressions only those they match", async () => {
    expect(await store.countAll(ns, whole)).toBe(60);
    expect(await store.countAll(ns, whole, parsed('request.body contains "zebra-7781"'))).toBe(3);
    expect(await store.countAll(ns, whole, parsed('request.body contains "no-such-order"'))).toBe(0);
  });

  test("filter expressions are checked as every query's: none without a range, no oversized needle", async () => {
    expect(await codeOf(store.countAll(ns, undefined, parsed('request.body contains "zebra-7781"')))).toBe("BAD_REQUEST");
    const needle = "x".repeat(5000);
    const long: FilterExpr = { kind: "compare", field: "request.body", op: "contains", value: needle, pos: 0 } as FilterExpr;
    expect(await codeOf(store.countAll(ns, whole, [long]))).toBe("BAD_REQUEST");
  });
});
