import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { apiCalls } from "~/lib/protocol/api/calls.ts";
import { backends, captureLogs, startTestApp, type TestApp } from "../support/app.ts";

type Fixture = { orgId: string; namespaceId: string; spareNamespaceId: string; memberId: string };

/**
 * Every cookie-authenticated JSON call, with a body that would succeed for the fixture's admin (or fail on its own
 * terms: an unknown id). The destructive ones aim at what the fixture has to spare: a second namespace, a member.
 */
function endpoints(u: Fixture): Array<[string, object]> {
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
    ["/api/RevokeInvitation", { invitationId: crypto.randomUUID() }],
    ["/api/ListMyInvitations", {}],
    ["/api/AcceptInvitation", { invitationId: crypto.randomUUID() }],
    ["/api/DeclineInvitation", { invitationId: crypto.randomUUID() }],
    ["/api/HasSeenPublisher", { orgId: u.orgId }],
    ["/api/JoinSubscriber", { namespaceId: u.namespaceId }],
    ["/api/CreateTunnel", { namespaceId: u.namespaceId, role: "SELECT" }],
    ["/api/GetBillingStatus", { orgId: u.orgId }],
    ["/api/GetSubscription", { orgId: u.orgId }],
    ["/api/OpenBillingPortal", { orgId: u.orgId }],
    ["/api/EndUserSessions", { namespaceId: u.namespaceId, userId: u.memberId }],
    ["/api/RemoveUser", { namespaceId: u.namespaceId, userId: u.memberId }],
    ["/api/GetOtlpExport", { namespaceId: u.namespaceId }],
    ["/api/SaveOtlpExport", { namespaceId: u.namespaceId, endpoint: "", protocol: "http/protobuf", isEnabled: false }],
    ["/api/DeleteOtlpExport", { namespaceId: u.namespaceId }],
    ["/api/DeleteNamespace", { namespaceId: u.spareNamespaceId }],
  ];
}

/**
 * The calls a read-only member of the namespace may not make (403 with the call's own words), and one each of what
 * they may: the matrix of who may call what, beside the table of calls.
 */
function adminOnly(u: Fixture, other: { userId: string }): Array<[string, object]> {
  return [
    ["/api/CreateNamespace", { orgId: u.orgId, name: `m${crypto.randomUUID().slice(0, 6)}` }],
    ["/api/GenerateNamespaceToken", { namespaceId: u.namespaceId }],
    ["/api/GenerateOrgToken", { orgId: u.orgId }],
    ["/api/AddUser", { namespaceId: u.namespaceId, email: "by-member@example.com" }],
    ["/api/RemoveUser", { namespaceId: u.namespaceId, userId: other.userId }],
    ["/api/EndUserSessions", { namespaceId: u.namespaceId, userId: other.userId }],
    ["/api/GetOtlpExport", { namespaceId: u.namespaceId }],
    [
      "/api/SaveOtlpExport",
      { namespaceId: u.namespaceId, endpoint: "http://collector.example:4318", protocol: "http/protobuf", isEnabled: true },
    ],
    ["/api/DeleteOtlpExport", { namespaceId: u.namespaceId }],
    ["/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }],
    ["/api/DeleteNamespace", { namespaceId: u.namespaceId }],
  ];
}

/**
 * Calls the matrix leaves to their own suites, and why: every other call of lib/protocol/api must be in it, so a new
 * call cannot be added without saying who may make it.
 */
const outsideTheMatrix: Record<string, string> = {
  EmailLogin: "anonymous: asks for a sign-in link (tests/api/auth-email.test.ts)",
  FinishEmailLogin: "anonymous: the link's page signs in (tests/api/auth-email.test.ts)",
  JoinPublisher: "a namespace token or an anonymous link (tests/api/publish.test.ts)",
  GetLink: "the link id is the capability (tests/api/live.test.ts)",
  ListOpenTunnels: "any principal's own tunnels (tests/tunnel/tunnel.test.ts)",
  CancelSubscription: "billing on only (tests/api/billing.test.ts)",
  SendOtlpTestSpan: "sends to a collector; its admin matrix is here, the rest in tests/otlp/settings.test.ts",
};

for (const backend of backends) {
  describe(`security [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    /** An admin with a second namespace and a member to spare, so the destructive calls have something to take. */
    async function fixture() {
      const u = await t.onboardedUser();
      const spare = await t.call(
        "/api/CreateNamespace",
        { orgId: u.orgId, name: `spare-${crypto.randomUUID().slice(0, 6)}` },
        { cookie: u.cookie },
      );
      const member = await t.user();
      await t.addMember(u, member);
      return { ...u, spareNamespaceId: spare.body.namespaceId as string, memberId: member.userId, member };
    }

    test("every call of lib/protocol/api is in the matrix, or its suite is named", () => {
      const covered = new Set(endpoints({ orgId: "", namespaceId: "", spareNamespaceId: "", memberId: "" }).map(([path]) => path.slice(5)));
      const missing = Object.keys(apiCalls).filter((name) => !covered.has(name) && !(name in outsideTheMatrix));
      expect(missing).toEqual([]);
    });

    test("every call needs a signed-in user: 401 with a JSON error and a trace id", async () => {
      const u = await fixture();
      for (const [path, body] of endpoints(u)) {
        const res = await t.call(path, body);
        expect(res.status, path).toBe(401);
        expect(res.body).toEqual({ error: "not signed in" });
        expect(res.headers.get("x-trace-id")).toMatch(/^[A-Za-z0-9_-]{16}$/);
      }
      expect((await t.request("/api/GetSelf")).status).toBe(401);
    });

    test("the same calls succeed (or fail on their own terms) with the session, same Origin and JSON", async () => {
      const u = await fixture();
      for (const [path, body] of endpoints(u)) {
        const res = await t.call(path, body, { cookie: u.cookie });
        expect([200, 404], path).toContain(res.status);
      }
      // The destructive ones did what they say.
      expect((await t.call("/api/ListUsers", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.users).toHaveLength(2);
      expect((await t.call("/api/ListUsers", { namespaceId: u.spareNamespaceId }, { cookie: u.cookie })).status).toBe(404);
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.member.cookie } })).status).toBe(401);
    });

    test("who may call what: a read-only member gets 403 with the call's words on admin calls, and reads", async () => {
      const u = await fixture();
      const reader = await t.user();
      await t.addMember(u, reader);
      for (const [path, body] of adminOnly(u, { userId: u.memberId })) {
        const res = await t.call(path, body, { cookie: reader.cookie });
        expect(res.status, path).toBe(403);
        expect(res.body.error, path).toMatch(/^(You do not have permissions to|forbidden: you are not allowed to)/);
      }
      for (const [path, body] of [
        ["/api/ListUsers", { namespaceId: u.namespaceId }],
        ["/api/ListNamespaceTokens", { namespaceId: u.namespaceId }],
        ["/api/JoinSubscriber", { namespaceId: u.namespaceId }],
      ] as const) {
        expect((await t.call(path, body, { cookie: reader.cookie })).status, path).toBe(200);
      }
      // Nothing was taken: the member and the namespace are still there.
      const users = (await t.call("/api/ListUsers", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.users;
      expect(users.map((x: { userId: string }) => x.userId)).toContain(u.memberId);
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.member.cookie } })).status).toBe(200);
    });

    test("CSRF: cookie POSTs without Origin, from another Origin, or not JSON are refused with 403", async () => {
      const u = await fixture();
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
      expect(users.body.users.map((x: { userId: string }) => x.userId)).toContain(u.memberId);
      expect((await t.call("/api/ListUsers", { namespaceId: u.spareNamespaceId }, { cookie: u.cookie })).status).toBe(200);
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
      const b = await fixture();
      for (const [path, body] of endpoints(b)) {
        if (path === "/api/ListOrgs" || path === "/api/OnboardNewUser" || path === "/api/ListMyInvitations") continue;
        const res = await t.call(path, body, { cookie: a.cookie });
        expect(res.status, path).toBe(404);
        expect(JSON.stringify(res.body)).not.toContain(b.email);
      }
      // Nothing of b's was taken.
      const users = (await t.call("/api/ListUsers", { namespaceId: b.namespaceId }, { cookie: b.cookie })).body.users;
      expect(users.map((x: { userId: string }) => x.userId)).toContain(b.memberId);
      expect((await t.call("/api/ListUsers", { namespaceId: b.spareNamespaceId }, { cookie: b.cookie })).status).toBe(200);
      expect((await t.request("/api/GetSelf", { headers: { cookie: b.member.cookie } })).status).toBe(200);
      expect((await t.call("/api/ListOrgs", {}, { cookie: a.cookie })).body.orgs).toEqual([
        { orgId: a.orgId, name: a.email, lastSeenWorkerTime: null },
      ]);
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
