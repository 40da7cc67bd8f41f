import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { parseFilter } from "~/lib/filter/parse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { rng } from "../support/rng.ts";

/**
 * The store side of issue 14's item 2: the explorer's `matches` goes to DuckDB's regexp_matches, RE2, linear-time
 * but about 5 ms per 4,200-character row for `[ab]*a[ab]{99}z`. That work runs on DuckDB's threads: the event loop
 * stays free however long it takes. (DuckDB checks for interruption between vectors of rows, so such a query
 * overruns its timeout by up to a vector's worth of RE2.)
 */
const endMs = Date.UTC(2026, 0, 10, 12);
const global = { lowerMs: endMs - 3_600_000, upperMs: endMs };
const ns = randomUUID();
let store: EventStore;

beforeAll(async () => {
  store = await openDuckDbStore({ path: ":memory:" });
  const r = rng(21);
  const events = Array.from({ length: 200 }, (_, i) => {
    let path = "/";
    while (path.length < 4200) path += r() < 0.5 ? "a" : "b";
    return tracedEvent({ time: (endMs - 1000 - i) * 1000, http_req_path: path });
  });
  await store.insert(ns, events);
}, 60_000);
afterAll(() => store?.close());

test("DFA-hostile regexes over long URLs are answered by RE2 off the event loop", async () => {
  // Distinct patterns: DuckDB evaluates a repeated expression once.
  const rows = async (text: string) => {
    const parsed = parseFilter(text);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return (await store.queryRows(ns, { filter: { clauses: [], global }, expressions: [parsed.expr], limit: 1 })).actualNumberOfRows;
  };
  let worstLag = 0;
  const t0 = performance.now();
  let last = t0;
  const timer = setInterval(() => {
    worstLag = Math.max(worstLag, performance.now() - last);
    last = performance.now();
  }, 5);
  try {
    expect(await rows('request.url matches "[ab]*a[ab]{99}z" || request.url matches "[ab]*b[ab]{98}z"')).toBe(0);
    expect(await rows('request.url matches "[ab]*a[ab]{99}"')).toBe(200);
  } finally {
    clearInterval(timer);
  }
  // On the event loop, RE2's seconds would be one long stall; on DuckDB's threads the loop keeps turning.
  const elapsed = performance.now() - t0;
  expect(worstLag).toBeLessThan(elapsed / 2);
}, 60_000);
