import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { invitations } from "#db/schema/index.ts";
import { backends, startTestApp, type TestApp } from "../support/app.ts";

for (const backend of backends) {
  describe(`users and invitations [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    test("the creator is listed as admin; an invited existing user joins as member at once", async () => {
      const admin = await t.onboardedUser();
      const bob = await t.user();
      t.clock.advance(60_000);
      const add = await t.call(
        "/api/AddUser",
        { namespaceId: admin.namespaceId, email: bob.email.toUpperCase() },
        { cookie: admin.cookie },
      );
      expect(add.status).toBe(200);
      expect(add.body).toEqual({ isPending: false });

      const list = await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.status).toBe(200);
      expect(list.body.users).toEqual([
        { userId: admin.userId, email: admin.email, joinTime: expect.any(String), hasWrite: true, isPending: false },
        { userId: bob.userId, email: bob.email, joinTime: t.clock.now().toISOString(), hasWrite: false, isPending: false },
      ]);

      // Bob now sees the org and the namespace, and may read its users.
      expect((await t.call("/api/ListOrgs", {}, { cookie: bob.cookie })).body.orgs).toEqual([
        { orgId: admin.orgId, lastSeenWorkerTime: null },
      ]);
      const ns = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: bob.cookie });
      expect(ns.body.namespaces.map((n: { namespaceId: string }) => n.namespaceId)).toEqual([admin.namespaceId]);
      expect((await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: bob.cookie })).status).toBe(200);

      // Adding again changes nothing.
      await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: bob.email }, { cookie: admin.cookie });
      expect((await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.users).toHaveLength(2);
    });

    test("inviting an unknown address creates a pending invitation that takes effect when it signs in", async () => {
      const admin = await t.onboardedUser();
      const email = `new-${crypto.randomUUID().slice(0, 6)}@example.com`;
      const add = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email }, { cookie: admin.cookie });
      expect(add.body).toEqual({ isPending: true });
      const pending = await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(pending.body.users.find((u: { email: string }) => u.email === email)).toEqual({
        userId: null,
        email,
        joinTime: expect.any(String),
        hasWrite: false,
        isPending: true,
      });

      const invited = await t.user(email); // signs in (same path as the sign-in routes)
      expect((await t.call("/api/ListOrgs", {}, { cookie: invited.cookie })).body.orgs).toEqual([
        { orgId: admin.orgId, lastSeenWorkerTime: null },
      ]);
      const users = (await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.users;
      expect(users).toHaveLength(2);
      expect(users.find((u: { email: string }) => u.email === email)).toEqual({
        userId: invited.userId,
        email,
        joinTime: expect.any(String),
        hasWrite: false,
        isPending: false,
      });
      const [row] = await t.db.select().from(invitations).where(eq(invitations.email, email));
      expect(row!.acceptedAt).not.toBeNull();
      // An invited member is not an org admin: no namespace creation.
      const create = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "mine" }, { cookie: invited.cookie });
      expect(create.status).toBe(403);
    });

    test("a member cannot invite; a stranger learns nothing; bad addresses are refused", async () => {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: member.email }, { cookie: admin.cookie });
      const refused = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "x@example.com" }, { cookie: member.cookie });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe("You do not have permissions to invite users to this namespace.");

      const stranger = await t.onboardedUser();
      for (const path of ["/api/ListUsers", "/api/AddUser"]) {
        const foreign = await t.call(path, { namespaceId: admin.namespaceId, email: "y@example.com" }, { cookie: stranger.cookie });
        const unknown = await t.call(path, { namespaceId: crypto.randomUUID(), email: "y@example.com" }, { cookie: stranger.cookie });
        expect(foreign.status).toBe(404);
        expect(foreign.body).toEqual(unknown.body);
      }
      const invalid = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "nope" }, { cookie: admin.cookie });
      expect(invalid.status).toBe(400);
      const list = await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.body.users.map((u: { email: string }) => u.email).sort()).toEqual([admin.email, member.email].sort());
    });
  });
}
