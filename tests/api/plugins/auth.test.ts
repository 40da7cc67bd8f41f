import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { credentialFromRequest, credentialFromUpgrade } from "~/api/plugins/auth.ts";
import { backends, ORIGIN, startTestApp, type TestApp } from "../../support/app.ts";

for (const backend of backends) {
  describe(`principal from a Request (WebSocket upgrades, SSR) [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    const upgrade = (headers: Record<string, string>) =>
      new Request("http://tapscope.test/api/ws", { headers: { upgrade: "websocket", ...headers } });

    test("a session cookie with our Origin is the user; without a matching Origin it counts for nothing", async () => {
      const u = await t.user();
      const ok = await credentialFromUpgrade({ ctx: t.ctx, request: upgrade({ cookie: u.cookie, origin: ORIGIN }) });
      expect(ok).toEqual({ principal: { kind: "user", userId: u.userId, email: u.email, sessionId: u.sessionId }, hasInvalidToken: false });
      const none = { principal: null, hasInvalidToken: false };
      expect(await credentialFromUpgrade({ ctx: t.ctx, request: upgrade({ cookie: u.cookie, origin: "https://evil.example" }) })).toEqual(
        none,
      );
      expect(await credentialFromUpgrade({ ctx: t.ctx, request: upgrade({ cookie: u.cookie }) })).toEqual(none);
      // Plain requests read the cookie without an Origin (a cookie POST's Origin is checked as CSRF instead).
      expect((await credentialFromRequest({ ctx: t.ctx, request: upgrade({ cookie: `a=1; ${u.cookie}; b=2` }) })).principal?.kind).toBe(
        "user",
      );
    });

    test("a bearer token works from anywhere and names its scope", async () => {
      const admin = await t.onboardedUser();
      const { token, tokenId } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie }))
        .body;
      const p = await credentialFromUpgrade({ ctx: t.ctx, request: upgrade({ authorization: `Bearer ${token}` }) });
      expect(p.principal).toEqual({ kind: "namespaceToken", tokenId, namespaceId: admin.namespaceId, orgId: admin.orgId });
      // An invalid bearer never falls back to the cookie: it is an invalid credential, not none.
      const withBoth = upgrade({ authorization: "Bearer nope", cookie: admin.cookie, origin: ORIGIN });
      expect(await credentialFromUpgrade({ ctx: t.ctx, request: withBoth })).toEqual({ principal: null, hasInvalidToken: true });
    });
  });
}
