import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { orgs } from "#db/schema/index.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";

for (const backend of backends) {
  describe(`orgs and namespaces [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    test("a new user has no org until onboarding, then exactly one org with the first namespace", async () => {
      const u = await t.user("Alice.Smith@Example.com");
      const before = await t.call("/api/ListOrgs", {}, { cookie: u.cookie });
      expect(before.status).toBe(200);
      expect(before.body).toEqual({ orgs: [] });

      const onboard = await t.call("/api/OnboardNewUser", { namespaceName: "alice.smith" }, { cookie: u.cookie });
      expect(onboard.status).toBe(200);
      expect(onboard.body.namespace.name).toBe("alice.smith");
      const { orgId } = onboard.body.org;
      const { namespaceId } = onboard.body.namespace;

      const orgs = await t.call("/api/ListOrgs", {}, { cookie: u.cookie });
      // Named after its creator, so a member of several orgs can tell them apart.
      expect(orgs.body).toEqual({ orgs: [{ orgId, name: "alice.smith@example.com", lastSeenWorkerTime: null }] });
      const namespaces = await t.call("/api/ListNamespaces", { orgId }, { cookie: u.cookie });
      expect(namespaces.body).toEqual({ namespaces: [{ namespaceId, name: "alice.smith" }] });

      // A second onboarding (double submit) returns the same org and namespace instead of making another.
      const again = await t.call("/api/OnboardNewUser", { namespaceName: "other" }, { cookie: u.cookie });
      expect(again.body).toEqual(onboard.body);
      expect((await t.call("/api/ListOrgs", {}, { cookie: u.cookie })).body.orgs).toHaveLength(1);
    });

    test("ListOrgs carries the org's last worker sighting for the Requests link", async () => {
      const u = await t.onboardedUser();
      const seen = new Date("2026-11-20T10:00:00.000Z");
      await t.db.update(orgs).set({ lastSeenWorkerTime: seen }).where(eq(orgs.id, u.orgId));
      const res = await t.call("/api/ListOrgs", {}, { cookie: u.cookie });
      expect(res.body).toEqual({ orgs: [{ orgId: u.orgId, name: u.email, lastSeenWorkerTime: seen.toISOString() }] });
    });

    test("ListOrgs and OnboardNewUser need a session", async () => {
      expect((await t.call("/api/ListOrgs", {})).status).toBe(401);
      expect((await t.call("/api/OnboardNewUser", { namespaceName: "x" })).status).toBe(401);
    });
  });
}
