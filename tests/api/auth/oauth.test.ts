import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { backends, cookieFrom, PUBLIC_URL, setCookieLine, startTestApp, type TestApp } from "../../support/app.ts";
import { startOAuthProvider } from "../../support/oauth-provider.ts";

const OAUTH_COOKIES = ["tapscope_oauth_state", "tapscope_oauth_verifier", "tapscope_oauth_next"];

for (const backend of backends) {
  describe(`Google and GitHub sign-in [${backend}]`, () => {
    let t: TestApp;
    let provider: ReturnType<typeof startOAuthProvider>;
    beforeAll(async () => {
      provider = startOAuthProvider();
      t = await startTestApp({ backend, env: provider.env });
    }, 60_000);
    afterAll(async () => {
      await t.close();
      provider.stop();
    });

    /** Browser steps: our redirect -> provider authorize (auto-consents) -> back to our callback with its cookies. */
    async function begin(name: "Google" | "Github", next?: string) {
      const start = await t.request(`/api/${name}Redirect${next === undefined ? "" : `?next=${encodeURIComponent(next)}`}`);
      expect(start.status).toBe(302);
      const authorize = new URL(start.headers.get("location")!);
      expect(authorize.origin).toBe(provider.base);
      expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
      expect(authorize.searchParams.get("redirect_uri")).toBe(`${PUBLIC_URL}/api/${name}Callback`);
      for (const c of OAUTH_COOKIES) {
        const line = setCookieLine(start.res, c)!;
        expect(line).toContain("HttpOnly");
        expect(line).toContain("SameSite=Lax");
      }
      const cookies = OAUTH_COOKIES.map((c) => cookieFrom(start.res, c)!).join("; ");
      const consent = await fetch(authorize, { redirect: "manual" });
      expect(consent.status).toBe(302);
      const callback = new URL(consent.headers.get("location")!);
      expect(callback.origin).toBe(PUBLIC_URL);
      return { callbackPath: callback.pathname + callback.search, cookies, state: callback.searchParams.get("state")! };
    }

    for (const name of ["Google", "Github"] as const) {
      test(`${name}: the provider's verified address signs in and lands on next`, async () => {
        const email = `${name.toLowerCase()}-${crypto.randomUUID().slice(0, 6)}@example.com`;
        provider.state.account = { email, verified: true };
        const { callbackPath, cookies } = await begin(name, "/dashboard/ns/users");
        const done = await t.request(callbackPath, { headers: { cookie: cookies } });
        expect(done.status).toBe(302);
        expect(done.headers.get("location")).toBe("/dashboard/ns/users");
        // The round-trip cookies are cleared.
        for (const c of OAUTH_COOKIES) expect(setCookieLine(done.res, c)).toMatch(/Max-Age=0/);
        const cookie = cookieFrom(done.res, SESSION_COOKIE)!;
        const self = await t.request("/api/GetSelf", { headers: { cookie } });
        expect(self.status).toBe(200);
        expect(self.body.email).toBe(email);
      });
    }

    test("a state that does not match the cookie is refused (and the code is never redeemed)", async () => {
      const { callbackPath, cookies, state } = await begin("Google");
      const before = provider.state.tokenRequests;
      const tampered = callbackPath.replace(`state=${encodeURIComponent(state)}`, "state=attacker");
      const res = await t.request(tampered, { headers: { cookie: cookies } });
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toStartWith("/login?error=");
      expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
      expect(provider.state.tokenRequests).toBe(before);
    });

    test("a callback without the state cookies (login CSRF, other browser) is refused", async () => {
      const { callbackPath } = await begin("Github");
      const res = await t.request(callbackPath);
      expect(res.headers.get("location")).toStartWith("/login?error=");
      expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
    });

    test("a wrong PKCE verifier makes the provider refuse the code", async () => {
      const { callbackPath, cookies } = await begin("Google");
      const swapped = cookies.replace(/tapscope_oauth_verifier=[^;]+/, `tapscope_oauth_verifier=${"x".repeat(43)}`);
      const res = await t.request(callbackPath, { headers: { cookie: swapped } });
      expect(res.headers.get("location")).toStartWith("/login?error=");
      expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
    });

    test("an unverified Google address is refused", async () => {
      provider.state.account = { email: "unverified@example.com", verified: false };
      const { callbackPath, cookies } = await begin("Google");
      const res = await t.request(callbackPath, { headers: { cookie: cookies } });
      const location = new URL(res.headers.get("location")!, PUBLIC_URL);
      expect(location.pathname).toBe("/login");
      expect(location.searchParams.get("error")).toBe("no_verified_email");
      expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
    });

    test("the user cancelling at the provider lands back on /login", async () => {
      const res = await t.request("/api/GoogleCallback?error=access_denied&state=x");
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toStartWith("/login?error=");
    });

    test("open-redirect attempts in next fall back to /dashboard", async () => {
      provider.state.account = { email: "redirects@example.com", verified: true };
      for (const next of ["//evil.com", "/\\evil.com", "https://evil.com", "/\r\n//evil.com", "\\\\evil.com", "http:/evil.com"]) {
        const { callbackPath, cookies } = await begin("Google", next);
        const res = await t.request(callbackPath, { headers: { cookie: cookies } });
        expect(res.headers.get("location")).toBe("/dashboard");
      }
    });
  });
}

describe("OAuth not configured", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  }, 60_000);
  afterAll(() => t.close());

  test("the redirect answers 404 with a JSON error", async () => {
    for (const path of ["/api/GoogleRedirect", "/api/GithubRedirect"]) {
      const res = await t.request(path);
      expect(res.status).toBe(404);
      expect(res.body.error).toContain("not configured");
    }
  });
});
