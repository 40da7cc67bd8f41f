import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Database } from "#db/client.ts";
import { namespaces, orgs } from "#db/schema/index.ts";
import { applyRetention, retentionDaysFor } from "~/engines/store/retention.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { generateEvents } from "../../store/generate.ts";
import { createTestPglite } from "../../support/pglite.ts";

const day = 86_400_000;
const now = new Date(Date.UTC(2026, 0, 31, 12));
const env = { DATA_DIR: "/tmp/tapscope-retention-test", SESSION_SECRET: "retention-test-secret-0123456789" };

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

test("plan retention: Free 3, Team 7, Scale 30 days; self-hosted keeps RETENTION_DAYS", () => {
  const plans = parseConfig({ ...env, PLAN_RETENTION: "1" });
  expect(retentionDaysFor("free", plans)).toBe(3);
  expect(retentionDaysFor("team", plans)).toBe(7);
  expect(retentionDaysFor("scale", plans)).toBe(30);
  expect(retentionDaysFor("something-else", plans)).toBe(3);
  const selfHosted = parseConfig({ ...env, RETENTION_DAYS: "45" });
  expect(retentionDaysFor("free", selfHosted)).toBe(45);
  expect(parseConfig(env).retentionDays).toBe(30);
  // With billing on, plans apply without PLAN_RETENTION; Enterprise keeps the server's own.
  const billing = parseConfig({
    ...env,
    RETENTION_DAYS: "90",
    STRIPE_SECRET_KEY: "sk",
    STRIPE_WEBHOOK_SECRET: "whsec",
    STRIPE_PRICE_TEAM: "p1",
    STRIPE_PRICE_SCALE: "p2",
  });
  expect(["free", "team", "scale", "enterprise"].map((plan) => retentionDaysFor(plan, billing))).toEqual([3, 7, 30, 90]);
});

test("the retention job applies each namespace's plan to its table", async () => {
  const config = parseConfig({ ...env, PLAN_RETENTION: "1" });
  const ids: Record<string, string> = {};
  for (const plan of ["free", "team", "scale"]) {
    const [org] = await database.db.insert(orgs).values({ name: plan, plan }).returning();
    const [ns] = await database.db
      .insert(namespaces)
      .values({ orgId: org?.id as string, name: plan })
      .returning();
    ids[plan] = ns?.id as string;
    // One event per day for the last 40 days.
    const events = generateEvents({
      count: 40,
      startMicros: (now.getTime() - 40 * day) * 1000,
      endMicros: now.getTime() * 1000,
    });
    await store.insert(ns?.id as string, events);
  }
  expect(await applyRetention({ db: database.db, config, store, now: () => now })).toBe(3);
  const kept = async (plan: string) =>
    (
      await store.queryRows(ids[plan] as string, {
        filter: { clauses: [], global: { lowerMs: now.getTime() - 60 * day, upperMs: now.getTime() + 1 } },
      })
    ).actualNumberOfRows;
  expect(await kept("free")).toBe(3);
  expect(await kept("team")).toBe(7);
  expect(await kept("scale")).toBe(30);
});
