import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { backends, captureLogs, startTestApp, type TestApp } from "../support/app.ts";

/** Every cookie-authenticated JSON call, with a body that would succeed for the caller. */
function endpoints(u: { orgId: string; namespaceId: string }): Array<[string, object]> {
  return [
    ["/api/ListOrgs", {}],
    ["/api/ListNamespaces", { orgId: u.orgId }],
    ["/api/CreateNamespace", { orgId: u.orgId, name: `n${crypto.randomUUID().slice(0, 6)}` }],
    ["/api/OnboardNewUser", { namespaceName: "x" }],
    ["/api/GenerateNamespaceToken", { namespaceId: u.namespaceId }],
    ["/api/GenerateOrgToken", { orgId: u.orgId }],
    ["/api/ListNamespaceTokens", { namespaceId: u.namespaceId }],
    ["/api/ListOrgTokens", { orgId: u.orgId }],
    ["/api/DeleteNamespaceToken", { tokenId: crypto.randomUUID() }],
    ["/api/DeleteOrgToken", { tokenId: crypto.randomUUID() }],
    ["/api/ListUsers", { namespaceId: u.namespaceId }],
    ["/api/AddUser", { namespaceId: u.namespaceId, email: "invitee@example.com" }],
  ];
}

for (const backend of backends) {
  describe(`security [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    test("every call needs a signed-in user: 401 with a JSON error and a trace id", async () => {
      const u = await t.onboardedUser();
      for (const [path, body] of endpoints(u)) {
        const res = await t.call(path, body);
        expect(res.status, path).toBe(401);
        expect(res.body).toEqual({ error: "not signed in" });
        expect(res.headers.get("x-trace-id")).toMatch(/^[A-Za-z0-9_-]{16}$/);
      }
      expect((await t.request("/api/GetSelf")).status).toBe(401);
    });

    test("the same calls succeed (or fail on their own terms) with the session, same Origin and JSON", async () => {
      const u = await t.onboardedUser();
      for (const [path, body] of endpoints(u)) {
        const res = await t.call(path, body, { cookie: u.cookie });
        expect([200, 404], path).toContain(res.status);
      }
    });

    test("CSRF: cookie POSTs without Origin, from another Origin, or not JSON are refused with 403", async () => {
      const u = await t.onboardedUser();
      for (const [path, body] of endpoints(u)) {
        const noOrigin = await t.call(path, body, { cookie: u.cookie, origin: null });
        expect(noOrigin.status, path).toBe(403);
        const evil = await t.call(path, body, { cookie: u.cookie, origin: "https://evil.example" });
        expect(evil.status, path).toBe(403);
        const nullOrigin = await t.call(path, body, { cookie: u.cookie, origin: "null" });
        expect(nullOrigin.status, path).toBe(403);
      }
      // A cross-site form post: text/plain (no preflight), carrying JSON-looking text.
      const form = await t.request("/api/AddUser", {
        method: "POST",
        headers: { cookie: u.cookie, origin: "http://tapscope.test", "content-type": "text/plain" },
        body: JSON.stringify({ namespaceId: u.namespaceId, email: "csrf@example.com" }),
      });
      expect(form.status).toBe(403);
      const users = await t.call("/api/ListUsers", { namespaceId: u.namespaceId }, { cookie: u.cookie });
      expect(users.body.users.map((x: { email: string }) => x.email)).not.toContain("csrf@example.com");
    });

    test("the request's own origin is accepted too (e.g. reached by another host name)", async () => {
      const u = await t.onboardedUser();
      const res = await t.app.handle(
        new Request("http://127.0.0.1:4000/api/ListOrgs", {
          method: "POST",
          headers: { cookie: u.cookie, origin: "http://127.0.0.1:4000", "content-type": "application/json" },
          body: "{}",
        }),
      );
      expect(res.status).toBe(200);
    });

    test("bearer calls need no Origin (they are not sent by browsers on their own)", async () => {
      const u = await t.onboardedUser();
      const { token } = (await t.call("/api/GenerateOrgToken", { orgId: u.orgId }, { cookie: u.cookie })).body;
      expect((await t.call("/api/ListNamespaces", { orgId: u.orgId }, { bearer: token, origin: null })).status).toBe(200);
    });

    test("a session of one user never reaches another org's data", async () => {
      const a = await t.onboardedUser();
      const b = await t.onboardedUser();
      for (const [path, body] of endpoints(b)) {
        if (path === "/api/ListOrgs" || path === "/api/OnboardNewUser") continue;
        const res = await t.call(path, body, { cookie: a.cookie });
        expect(res.status, path).toBe(404);
        expect(JSON.stringify(res.body)).not.toContain(b.email);
      }
      expect((await t.call("/api/ListOrgs", {}, { cookie: a.cookie })).body.orgs).toEqual([{ orgId: a.orgId, lastSeenWorkerTime: null }]);
    });

    test("a failed call's trace id header is in the server's log line for that request", async () => {
      let traceId: string | null = null;
      const lines = await captureLogs(async () => {
        const res = await t.call("/api/ListOrgs", {});
        expect(res.status).toBe(401);
        traceId = res.headers.get("x-trace-id");
      });
      const line = lines.map((l) => JSON.parse(l)).find((r) => r.traceId === traceId);
      expect(line).toMatchObject({ path: "/api/ListOrgs", status: 401, error: "not signed in" });
    });

    test("broken JSON is a 400 with a JSON error, not a 500", async () => {
      const u = await t.onboardedUser();
      const res = await t.request("/api/ListOrgs", {
        method: "POST",
        headers: { cookie: u.cookie, origin: "http://tapscope.test", "content-type": "application/json" },
        body: "{not json",
      });
      expect(res.status).toBe(400);
      expect(typeof res.body.error).toBe("string");
    });
  });
}
