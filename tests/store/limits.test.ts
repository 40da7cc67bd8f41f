import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { generateEvents } from "./generate.ts";

const endMs = Date.UTC(2026, 0, 10, 12);
const filter = { clauses: [], global: { lowerMs: endMs - 86_400_000, upperMs: endMs } };
const ns = randomUUID();
let store: EventStore;

beforeAll(async () => {
  store = await openDuckDbStore({
    path: ":memory:",
    limits: { queryTimeoutMs: 1, maxConcurrentQueries: 1, maxQueuedQueries: 0 },
  });
  const events = generateEvents({
    count: 60_000,
    startMicros: (endMs - 86_400_000) * 1000,
    endMicros: endMs * 1000,
    bodyBytes: 16,
  });
  for (let i = 0; i < events.length; i += 20_000) await store.insert(ns, events.slice(i, i + 20_000));
}, 60_000);
afterAll(() => store?.close());

test("a query over its time budget is interrupted and reported as UNAVAILABLE", async () => {
  const err = await store
    .queryRows(ns, {
      filter,
      expressions: [{ kind: "compare", field: "request.url", op: "matches", value: "(a|b|c|d)+[0-9]{2,}x?$", pos: 0 }],
    })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("UNAVAILABLE");
});

test("with one slot and no queue, a second concurrent query of the namespace is refused", async () => {
  const results = await Promise.allSettled([store.histogram(ns, { filter }), store.histogram(ns, { filter })]);
  const refused = results.filter((r) => r.status === "rejected" && (r.reason as AppError).code === "RATE_LIMITED");
  expect(refused.length).toBe(1);
});
