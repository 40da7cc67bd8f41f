import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";
import { LiveClient } from "../../support/live-client.ts";

// The dashboard offers Requests once the org's store has been seen: a server that stores the org's events itself is
// its store, seen from the moment a program of the org connects, before any event is written.
describe("a program connecting makes the org's Requests available", () => {
  let t: TestApp;
  let store: EventStore;
  let listener: ReturnType<typeof listenTestApp>;
  beforeAll(async () => {
    store = await openDuckDbStore({ path: ":memory:" });
    t = await startTestApp({ backend: "pglite" });
    listener = listenTestApp(t, { store });
  }, 60_000);
  afterAll(async () => {
    await listener?.stop();
    await t?.close();
    await store?.close();
  });

  const lastSeen = async (user: { cookie: string; orgId: string }) => {
    const { orgs } = (await t.call("/api/ListOrgs", {}, { cookie: user.cookie })).body as {
      orgs: Array<{ orgId: string; lastSeenWorkerTime: string | null }>;
    };
    return orgs.find((org) => org.orgId === user.orgId)?.lastSeenWorkerTime ?? null;
  };

  test("no event sent: the org is seen once its program's socket opens, and not before", async () => {
    const owner = await t.onboardedUser();
    const other = await t.onboardedUser();
    expect(await lastSeen(owner)).toBeNull();
    const { token } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).body;
    const join = await t.call("/api/JoinPublisher", {}, { origin: null, bearer: token });
    const publisher = await LiveClient.open(listener.socketUrl(join.body.websocketUrl));
    await publisher.until(() => publisher.texts.some((m) => m.includes('"ready"')), "publisher ready");
    let seen = await lastSeen(owner);
    for (let i = 0; i < 100 && seen === null; i++) {
      await Bun.sleep(50);
      seen = await lastSeen(owner);
    }
    expect(seen).toBe(t.clock.now().toISOString());
    expect(await lastSeen(other)).toBeNull();
    publisher.close();
  }, 30_000);
});
