import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Database } from "#db/client.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { attachStore } from "~/engines/store/attach-store.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { generateEvents } from "../../store/generate.ts";
import { createTestPglite } from "../../support/pglite.ts";

let database: Database;
let store: EventStore;
beforeAll(async () => {
  database = await createTestPglite();
  store = await openDuckDbStore({ path: ":memory:" });
}, 60_000);
afterAll(async () => {
  await store?.close();
  await database?.close();
});

test("events accepted by the app's sinks land in the store; closing writes what is batched", async () => {
  const config = parseConfig({
    DATA_DIR: "/tmp/tapscope-attach-test",
    SESSION_SECRET: "attach-test-secret-0123456789",
  });
  const sinks = new EventSinks();
  const attached = attachStore({ config, db: database.db, store, sinks });
  const ns = randomUUID();
  const endMs = Date.now();
  const events = generateEvents({ count: 1234, startMicros: (endMs - 60_000) * 1000, endMicros: endMs * 1000 });
  sinks.accept({ namespaceId: ns, linkId: null }, events);
  await attached.close();
  const rows = await store.queryRows(ns, {
    filter: { clauses: [], global: { lowerMs: endMs - 60_000, upperMs: endMs + 1 } },
  });
  expect(rows.actualNumberOfRows).toBe(1234);
  // Detached: later events are not written.
  sinks.accept({ namespaceId: ns, linkId: null }, events.slice(0, 5));
  expect(attached.sink.statsFor(ns).accepted).toBe(1234);
});

test("drops are logged, at most one line per namespace and reason every 10 s", async () => {
  const config = parseConfig({
    DATA_DIR: "/tmp/tapscope-attach-test",
    SESSION_SECRET: "attach-test-secret-0123456789",
  });
  const sinks = new EventSinks();
  const lines: string[] = [];
  const restore = setLogSink((line) => lines.push(line));
  const attached = attachStore({ config, db: database.db, store, sinks, rateLimit: 1 });
  const ns = randomUUID();
  const events = generateEvents({ count: 50, startMicros: Date.now() * 1000 - 1e6, endMicros: Date.now() * 1000 });
  sinks.accept({ namespaceId: ns, linkId: null }, events);
  sinks.accept({ namespaceId: ns, linkId: null }, events);
  await attached.close();
  restore();
  const warnings = lines.filter((l) => l.includes("events not stored"));
  expect(warnings).toHaveLength(1);
  expect(JSON.parse(warnings[0] as string)).toMatchObject({ namespaceId: ns, reason: "rate_limited", events: 40 });
  expect(attached.sink.statsFor(ns).dropped.rate_limited).toBe(90);
});
