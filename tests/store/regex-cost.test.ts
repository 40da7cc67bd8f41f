import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { limits } from "~/store/sql/compile.ts";
import type { EventStore } from "~/store/types.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { rng } from "../support/rng.ts";

/**
 * The explorer's `matches` runs as DuckDB's regexp_matches (RE2) on DuckDB's threads: the event loop stays free, but
 * DuckDB checks a query's timeout only between vectors of 2048 rows, so what one vector of patterns costs is how far
 * past its timeout a query can run. A pattern RE2 cannot run as a small DFA (`[ab]*a[ab]{99}z`) costs it about 2 us per
 * character: over 8 KB URLs, tens of seconds per vector. The compiler prices each pattern and bounds the sum per query.
 */
const endMs = Date.UTC(2026, 0, 10, 12);
const global = { lowerMs: endMs - 3_600_000, upperMs: endMs };
const ns = randomUUID();
const timeoutMs = 300;
let store: EventStore;

beforeAll(async () => {
  store = await openDuckDbStore({ path: ":memory:", limits: { queryTimeoutMs: timeoutMs } });
  const r = rng(21);
  const events = Array.from({ length: 4000 }, (_, i) => {
    let path = "/";
    while (path.length < 8000) path += r() < 0.5 ? "a" : "b";
    return tracedEvent({ time: (endMs - 1000 - i) * 1000, http_req_path: path });
  });
  for (let i = 0; i < events.length; i += 1000) await store.insert(ns, events.slice(i, i + 1000));
}, 120_000);
afterAll(() => store?.close());

/** Runs a filter, resolving to how long it took and what came of it (a row count, or the error's code and message). */
async function run(text: string): Promise<{ ms: number; rows?: number; code?: string; message?: string }> {
  const parsed = parseFilter(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const started = performance.now();
  try {
    const result = await store.queryRows(ns, { filter: { clauses: [], global }, expressions: [parsed.expr], limit: 1 });
    return { ms: performance.now() - started, rows: result.actualNumberOfRows };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { ms: performance.now() - started, code: err.code, message: err.message };
  }
}

const anyOf = (patterns: string[]) => patterns.map((p) => `request.url matches "${p}"`).join(" || ");
/** Distinct patterns (DuckDB evaluates a repeated expression once), each a small DFA. */
const cheap = (n: number) => Array.from({ length: n }, (_, i) => `[ab]{${i + 1}}z`);

test("a DFA-hostile regex over 8 KB URLs is refused at once, and leaves DuckDB's threads free; a cheap one runs as before", async () => {
  // Baseline: the slower of two runs of a pattern RE2 runs as a small DFA, over every row.
  const baseline = Math.max((await run(anyOf(cheap(1)))).ms, (await run(anyOf(cheap(1)))).ms);
  const hostile = await run(anyOf(["[ab]*a[ab]{99}z"]));
  const after = await run(anyOf(cheap(1)));
  console.log(
    `cheap regex: ${baseline.toFixed(0)} ms; hostile: ${hostile.ms.toFixed(0)} ms (${hostile.code}); cheap again: ${after.ms.toFixed(0)} ms`,
  );
  expect(hostile.code).toBe("BAD_REQUEST");
  expect(hostile.message).toContain('regular expression "[ab]*a[ab]{99}z" is too costly to run over stored events');
  // Before the bound it ran the whole scan, its timeout notwithstanding: about a minute here.
  expect(hostile.ms).toBeLessThan(timeoutMs + 5 * baseline);
  expect(after.ms).toBeLessThan(timeoutMs + 5 * baseline);
}, 120_000);

test("the most a query may ask (regexCost cheap patterns) overruns its timeout by at most what they cost per vector", async () => {
  const one = Math.max((await run(anyOf(cheap(1)))).ms, (await run(anyOf(cheap(1)))).ms);
  const most = await run(anyOf(cheap(limits.regexCost)));
  console.log(
    `one cheap regex: ${one.toFixed(0)} ms; ${limits.regexCost} of them: ${most.ms.toFixed(0)} ms (${most.code ?? `${most.rows} rows`})`,
  );
  // 4,000 rows are about one vector per thread: the whole query is what cannot be interrupted.
  expect(most.ms).toBeLessThan(timeoutMs + 2 * limits.regexCost * one);
  const tooMany = await run(anyOf(cheap(limits.regexCost + 1)));
  expect([tooMany.code, tooMany.message]).toEqual([
    "BAD_REQUEST",
    `too many regular expressions in one query: at most ${limits.regexCost}`,
  ]);
}, 120_000);
