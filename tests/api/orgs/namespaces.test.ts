import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";

for (const backend of backends) {
  describe(`namespaces [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    test("an admin creates a namespace; it appears in the list and its creator administers it", async () => {
      const admin = await t.onboardedUser();
      const res = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "staging" }, { cookie: admin.cookie });
      expect(res.status).toBe(200);
      expect(res.body.namespaceId).toMatch(/^[0-9a-f-]{36}$/);
      const list = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie });
      expect(list.body.namespaces).toContainEqual({ namespaceId: res.body.namespaceId, name: "staging" });
      expect((await t.call("/api/GenerateNamespaceToken", { namespaceId: res.body.namespaceId }, { cookie: admin.cookie })).status).toBe(
        200,
      );
    });

    test("duplicate and invalid names are refused", async () => {
      const admin = await t.onboardedUser();
      await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "dup" }, { cookie: admin.cookie });
      expect((await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "dup" }, { cookie: admin.cookie })).status).toBe(409);
      for (const name of ["", "   ", "a/b", "../x", "<script>", "x".repeat(64), "-lead"]) {
        const res = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name }, { cookie: admin.cookie });
        expect(res.status).toBe(400);
      }
    });

    test("racing creations of one name make one namespace; the others get 409, never 500", async () => {
      const admin = await t.onboardedUser();
      const answers = await Promise.all(
        [1, 2, 3, 4].map(() => t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "race" }, { cookie: admin.cookie })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409]);
      const list = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie });
      expect(list.body.namespaces.filter((n: { name: string }) => n.name === "race")).toHaveLength(1);
    });

    test("an onboarded user sending a bad name still gets their org back", async () => {
      const u = await t.onboardedUser();
      const res = await t.call("/api/OnboardNewUser", { namespaceName: "bad name/" }, { cookie: u.cookie });
      expect(res.status).toBe(200);
      expect(res.body.org.orgId).toBe(u.orgId);
    });

    test("a read-only member gets the spec's 403 text; a stranger cannot tell the org exists", async () => {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(admin, member);
      const refused = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "nope" }, { cookie: member.cookie });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: "forbidden: you are not allowed to create a namespace" });

      const stranger = await t.onboardedUser();
      for (const path of ["/api/CreateNamespace", "/api/ListNamespaces"]) {
        const foreign = await t.call(path, { orgId: admin.orgId, name: "x" }, { cookie: stranger.cookie });
        const unknown = await t.call(path, { orgId: crypto.randomUUID(), name: "x" }, { cookie: stranger.cookie });
        expect(foreign.status).toBe(404);
        expect(foreign.body).toEqual(unknown.body);
      }
      const names = (await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie })).body.namespaces;
      expect(names.map((n: { name: string }) => n.name)).not.toContain("x");
    });

    test("members only see the namespaces they belong to", async () => {
      const admin = await t.onboardedUser();
      const secret = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "secret" }, { cookie: admin.cookie });
      const member = await t.user();
      await t.addMember(admin, member);
      const list = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: member.cookie });
      expect(list.body.namespaces.map((n: { namespaceId: string }) => n.namespaceId)).toEqual([admin.namespaceId]);
      expect((await t.call("/api/ListUsers", { namespaceId: secret.body.namespaceId }, { cookie: member.cookie })).status).toBe(404);
    });

    test("onboarding without a name derives it from the e-mail; a bad name is refused", async () => {
      const u = await t.user(`jane.doe+${crypto.randomUUID().slice(0, 4)}@example.com`);
      const res = await t.call("/api/OnboardNewUser", {}, { cookie: u.cookie });
      expect(res.status).toBe(200);
      expect(res.body.namespace.name).toStartWith("jane.doe-");
      const v = await t.user();
      expect((await t.call("/api/OnboardNewUser", { namespaceName: "a b/c" }, { cookie: v.cookie })).status).toBe(400);
      expect((await t.call("/api/ListOrgs", {}, { cookie: v.cookie })).body.orgs).toEqual([]);
    });

    test("concurrent onboarding of one user makes one org", async () => {
      const u = await t.user();
      const answers = await Promise.all(
        [1, 2, 3].map(() => t.call("/api/OnboardNewUser", { namespaceName: "first" }, { cookie: u.cookie })),
      );
      for (const a of answers) expect(a.status).toBe(200);
      expect(new Set(answers.map((a) => a.body.org.orgId)).size).toBe(1);
      expect((await t.call("/api/ListOrgs", {}, { cookie: u.cookie })).body.orgs).toHaveLength(1);
    });
  });
}
