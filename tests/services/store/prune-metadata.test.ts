import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventLog, links, loginLinks } from "#db/schema/index.ts";
import { startRetention } from "~/engines/store/retention.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";

const minute = 60_000;
const day = 86_400_000;

for (const backend of backends) {
  describe(`the hourly retention job prunes what clients leave in the metadata [${backend}]`, () => {
    let t: TestApp;
    let store: EventStore;
    beforeAll(async () => {
      t = await startTestApp({ backend });
      store = await openDuckDbStore({ path: ":memory:" });
    }, 60_000);
    afterAll(async () => {
      await store.close();
      await t.close();
    });

    test("client reports older than 30 days, sign-in links an hour past use or expiry, shared links a week past expiry; fresh ones kept", async () => {
      const now = t.clock.now().getTime();
      const at = (ms: number) => new Date(now + ms);
      await t.db.insert(eventLog).values([
        { source: "Event", kind: "Old", tags: { a: "1" }, createdAt: at(-31 * day) },
        { source: "LogEvent", kind: "Recent", tags: {}, createdAt: at(-29 * day) },
      ]);
      const login = (email: string, createdMs: number, usedMs?: number) => ({
        email,
        tokenHash: crypto.randomUUID(),
        createdAt: at(createdMs),
        expiresAt: at(createdMs + 15 * minute),
        usedAt: usedMs === undefined ? null : at(usedMs),
      });
      await t.db
        .insert(loginLinks)
        .values([
          login("expired@example.com", -2 * 60 * minute),
          login("used@example.com", -90 * minute, -85 * minute),
          login("just-used@example.com", -10 * minute, -5 * minute),
          login("just-expired@example.com", -20 * minute),
          login("live@example.com", -1 * minute),
        ]);
      await t.db.insert(links).values([
        { id: "expired-long-ago-link-0123456789", createdAt: at(-9 * day), expiresAt: at(-8 * day) },
        { id: "expired-yesterday-link-012345678", createdAt: at(-2 * day), expiresAt: at(-1 * day) },
        { id: "live-link-0123456789012345678901", createdAt: at(-1 * minute), expiresAt: at(day) },
      ]);

      const stop = startRetention({ db: t.db, config: t.config, store, now: t.clock.now });
      await stop(); // waits for the run that starts at once

      expect((await t.db.select({ kind: eventLog.kind }).from(eventLog)).map((r) => r.kind)).toEqual(["Recent"]);
      expect((await t.db.select({ email: loginLinks.email }).from(loginLinks)).map((r) => r.email).sort()).toEqual([
        "just-expired@example.com",
        "just-used@example.com",
        "live@example.com",
      ]);
      expect((await t.db.select({ id: links.id }).from(links)).map((r) => r.id).sort()).toEqual([
        "expired-yesterday-link-012345678",
        "live-link-0123456789012345678901",
      ]);
    });
  });
}
