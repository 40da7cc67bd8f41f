import { createHash, randomBytes } from "node:crypto";

export type FakeAccount = { email: string; verified: boolean };

/**
 * A local HTTP server that plays Google and GitHub: the authorize endpoint (redirects back with a code),
 * the token endpoint (checks client credentials, redirect_uri and the PKCE verifier), userinfo and emails.
 */
export function startOAuthProvider({ clientId = "test-client", clientSecret = "test-secret" } = {}) {
  const codes = new Map<string, { challenge: string; redirectUri: string; account: FakeAccount }>();
  const accessTokens = new Map<string, FakeAccount>();
  const state = { account: { email: "oauth-user@example.com", verified: true } as FakeAccount, tokenRequests: 0 };

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/authorize") {
        const q = url.searchParams;
        if (q.get("client_id") !== clientId || q.get("response_type") !== "code") return new Response("bad client", { status: 400 });
        if (q.get("code_challenge_method") !== "S256" || !q.get("code_challenge")) return new Response("PKCE required", { status: 400 });
        const code = randomBytes(16).toString("hex");
        const redirectUri = q.get("redirect_uri") ?? "";
        codes.set(code, { challenge: q.get("code_challenge")!, redirectUri, account: { ...state.account } });
        const back = new URL(redirectUri);
        back.searchParams.set("code", code);
        back.searchParams.set("state", q.get("state") ?? "");
        return Response.redirect(back.toString(), 302);
      }
      if (url.pathname === "/token" && req.method === "POST") {
        state.tokenRequests++;
        const expected = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`;
        if (req.headers.get("authorization") !== expected) return Response.json({ error: "invalid_client" }, { status: 401 });
        const form = new URLSearchParams(await req.text());
        const grant = codes.get(form.get("code") ?? "");
        if (!grant) return Response.json({ error: "invalid_grant" }, { status: 400 });
        codes.delete(form.get("code") ?? "");
        const verifier = form.get("code_verifier") ?? "";
        const challenge = createHash("sha256").update(verifier).digest("base64url");
        if (challenge !== grant.challenge || form.get("redirect_uri") !== grant.redirectUri) {
          return Response.json({ error: "invalid_grant" }, { status: 400 });
        }
        const accessToken = randomBytes(16).toString("hex");
        accessTokens.set(accessToken, grant.account);
        return Response.json({ access_token: accessToken, token_type: "bearer", expires_in: 3600 });
      }
      const account = accessTokens.get((req.headers.get("authorization") ?? "").replace(/^Bearer /, ""));
      if (!account) return new Response("unauthorized", { status: 401 });
      if (url.pathname === "/userinfo") return Response.json({ sub: "1", email: account.email, email_verified: account.verified });
      if (url.pathname === "/user") return Response.json({ id: 1, login: "octo", email: null });
      if (url.pathname === "/user/emails") {
        return Response.json([
          { email: `secondary-${account.email}`, primary: false, verified: true },
          { email: account.email, primary: true, verified: account.verified },
        ]);
      }
      return new Response("not found", { status: 404 });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  return {
    state,
    base,
    /** Environment for parseConfig: both providers pointed at this server. */
    env: {
      GOOGLE_CLIENT_ID: clientId,
      GOOGLE_CLIENT_SECRET: clientSecret,
      GOOGLE_AUTHORIZE_URL: `${base}/authorize`,
      GOOGLE_TOKEN_URL: `${base}/token`,
      GOOGLE_USERINFO_URL: `${base}/userinfo`,
      GITHUB_CLIENT_ID: clientId,
      GITHUB_CLIENT_SECRET: clientSecret,
      GITHUB_AUTHORIZE_URL: `${base}/authorize`,
      GITHUB_TOKEN_URL: `${base}/token`,
      GITHUB_USERINFO_URL: `${base}/user`,
      GITHUB_EMAILS_URL: `${base}/user/emails`,
    },
    stop: () => server.stop(true),
  };
}
