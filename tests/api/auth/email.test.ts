import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, like } from "drizzle-orm";
import { loginLinks, sessions } from "#db/schema/index.ts";
import { LOGIN_BROWSER_COOKIE } from "~/api/auth/cookies.ts";
import { sha256Hex } from "~/lib/server/ids.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { backends, captureLogs, cookieFrom, PUBLIC_URL, setCookieLine, startTestApp, type TestApp } from "../../support/app.ts";
import { startSmtpServer } from "../../support/smtp.ts";

const LINK = /http:\/\/tapscope\.test\/login\/link\?token=[A-Za-z0-9_-]+/;

function linkPath(url: string): string {
  return url.slice(PUBLIC_URL.length);
}

function tokenOf(url: string): string {
  return new URL(url).searchParams.get("token") ?? "";
}

/** Each simulated person signs in from an address of their own (EmailLogin is limited per client too). */
let peers = 0;
const nextPeer = () => `198.51.100.${(peers++ % 250) + 1}`;

for (const backend of backends) {
  describe(`magic-link sign-in [${backend}]`, () => {
    let t: TestApp;
    let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
    beforeAll(async () => {
      smtp = await startSmtpServer();
      t = await startTestApp({ backend, env: { SMTP_URL: smtp.url, MAIL_FROM: "Tapscope <login@tapscope.test>" } });
    }, 60_000);
    afterAll(async () => {
      await t.close();
      await smtp.close();
    });

    /** Asks for a link as a browser does; `browser` is the cookie that browser was given with it. */
    async function mailedLink(email: string, next?: string, browser?: string): Promise<{ url: string; token: string; browser: string }> {
      const res = await t.call("/api/EmailLogin", next === undefined ? { email } : { email, next }, { peer: nextPeer(), cookie: browser });
      expect(res.status).toBe(200);
      const mail = await smtp.waitFor(email.toLowerCase());
      smtp.messages.splice(smtp.messages.indexOf(mail), 1);
      const url = LINK.exec(mail.text)?.[0];
      if (!url) throw new Error(`no link in mail:\n${mail.text}`);
      return { url, token: tokenOf(url), browser: cookieFrom(res.res, LOGIN_BROWSER_COOKIE) ?? browser ?? "" };
    }

    /** The POST the link's page sends (from our origin, with whatever browser cookie it holds). */
    function finish(token: string, opts: { browser?: string; confirm?: boolean; origin?: string | null; peer?: string } = {}) {
      return t.call("/api/FinishEmailLogin", opts.confirm === undefined ? { token } : { token, confirm: opts.confirm }, {
        cookie: opts.browser,
        origin: opts.origin,
        peer: opts.peer ?? nextPeer(),
      });
    }

    async function isSpent(token: string): Promise<boolean> {
      const [row] = await t.db
        .select({ usedAt: loginLinks.usedAt })
        .from(loginLinks)
        .where(eq(loginLinks.tokenHash, sha256Hex(token)));
      return row?.usedAt !== null && row?.usedAt !== undefined;
    }

    test("the mailed link opens a page; from the browser that asked, its POST signs in with an httpOnly Lax cookie and names next", async () => {
      const link = await mailedLink("Bob@Example.com", "/dashboard/bob/tokens?x=1");
      expect(
        setCookieLine((await t.call("/api/EmailLogin", { email: "bob2@example.com" }, { peer: nextPeer() })).res, LOGIN_BROWSER_COOKIE),
      ).toContain("HttpOnly");
      const page = await t.request(linkPath(link.url));
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(cookieFrom(page.res, SESSION_COOKIE)).toBeUndefined();

      const res = await finish(link.token, { browser: link.browser });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ signedIn: true, next: "/dashboard/bob/tokens?x=1" });
      const line = setCookieLine(res.res, SESSION_COOKIE)!;
      expect(line).toContain("HttpOnly");
      expect(line).toContain("SameSite=Lax");
      expect(line).not.toContain("Secure"); // PUBLIC_URL is http here
      const cookie = cookieFrom(res.res, SESSION_COOKIE)!;

      const self = await t.request("/api/GetSelf", { headers: { cookie } });
      expect(self.status).toBe(200);
      expect(self.body.email).toBe("bob@example.com");
      expect(typeof self.body.userId).toBe("string");
    });

    test("a GET or HEAD of the link (a mail scanner, a chat preview) spends nothing: the person's click still signs in", async () => {
      const link = await mailedLink("scanned@example.com");
      for (const method of ["GET", "HEAD"]) {
        for (const path of [linkPath(link.url), `/api/EmailLoginCallback?token=${link.token}`]) {
          const res = await t.request(path, { method });
          expect([200, 302], `${method} ${path}`).toContain(res.status);
          expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
        }
      }
      // A link mailed before the page existed lands on it.
      const old = await t.request(`/api/EmailLoginCallback?token=${link.token}`);
      expect(old.headers.get("location")).toBe(linkPath(link.url));
      expect(await isSpent(link.token)).toBe(false);
      const res = await finish(link.token, { browser: link.browser });
      expect(res.body).toEqual({ signedIn: true, next: "/dashboard" });
    });

    test("opened in another browser the link signs nobody in until the person confirms the account it names", async () => {
      // A link asked for with the attacker's own address, sent on to someone else.
      const link = await mailedLink("attacker-own@example.com");
      for (const browser of [undefined, `${LOGIN_BROWSER_COOKIE}=${"x".repeat(43)}`, `${LOGIN_BROWSER_COOKIE}=short`]) {
        const elsewhere = await finish(link.token, { browser });
        expect(elsewhere.status).toBe(200);
        expect(elsewhere.body).toEqual({ signedIn: false, email: "attacker-own@example.com" });
        expect(cookieFrom(elsewhere.res, SESSION_COOKIE)).toBeUndefined();
      }
      expect(await isSpent(link.token)).toBe(false);
      const confirmed = await finish(link.token, { confirm: true });
      expect(confirmed.body).toEqual({ signedIn: true, next: "/dashboard" });
      expect(cookieFrom(confirmed.res, SESSION_COOKIE)).toBeDefined();
    });

    test("one browser keeps its secret across requests: each of its links opens there without asking", async () => {
      const first = await mailedLink("twice@example.com");
      const second = await mailedLink("twice@example.com", undefined, first.browser);
      expect(second.browser).toBe(first.browser);
      expect((await finish(first.token, { browser: first.browser })).body.signedIn).toBe(true);
      expect((await finish(second.token, { browser: first.browser })).body.signedIn).toBe(true);
    });

    test("a cross-site POST cannot sign anyone in, with or without confirm; the link stays unspent", async () => {
      const link = await mailedLink("csrf-login@example.com");
      for (const origin of ["https://evil.example", null, "null"]) {
        const res = await finish(link.token, { browser: link.browser, confirm: true, origin });
        expect(res.status).toBe(403);
        expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
      }
      const form = await t.request("/api/FinishEmailLogin", {
        method: "POST",
        headers: { origin: "https://evil.example", "content-type": "text/plain", cookie: link.browser },
        body: JSON.stringify({ token: link.token, confirm: true }),
      });
      expect(form.status).toBe(403);
      expect(await isSpent(link.token)).toBe(false);
    });

    test("without next the link lands on /dashboard", async () => {
      const link = await mailedLink("nonext@example.com");
      expect((await finish(link.token, { browser: link.browser })).body).toEqual({ signedIn: true, next: "/dashboard" });
    });

    test("only the SHA-256 of the link secret and of the browser's secret are stored", async () => {
      const link = await mailedLink("hash@example.com");
      const browserSecret = link.browser.split("=")[1]!;
      const rows = await t.db.select().from(loginLinks).where(eq(loginLinks.email, "hash@example.com"));
      expect(rows).toHaveLength(1);
      expect(rows[0]!.tokenHash).toBe(sha256Hex(link.token));
      expect(rows[0]!.browserHash).toBe(sha256Hex(browserSecret));
      expect(JSON.stringify(rows)).not.toContain(link.token);
      expect(JSON.stringify(rows)).not.toContain(browserSecret);
    });

    test("a link works once", async () => {
      const link = await mailedLink("once@example.com");
      expect(cookieFrom((await finish(link.token, { browser: link.browser })).res, SESSION_COOKIE)).toBeDefined();
      for (const confirm of [undefined, true]) {
        const again = await finish(link.token, { browser: link.browser, confirm });
        expect(again.status).toBe(401);
        expect(cookieFrom(again.res, SESSION_COOKIE)).toBeUndefined();
      }
    });

    test("a link expires after 15 minutes", async () => {
      const link = await mailedLink("late@example.com");
      t.clock.advance(15 * 60 * 1000 + 1000);
      try {
        const res = await finish(link.token, { browser: link.browser });
        expect(res.status).toBe(401);
        expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
      } finally {
        t.clock.advance(-(15 * 60 * 1000 + 1000));
      }
      const fresh = await mailedLink("late@example.com");
      t.clock.advance(14 * 60 * 1000);
      try {
        expect(cookieFrom((await finish(fresh.token, { browser: fresh.browser })).res, SESSION_COOKIE)).toBeDefined();
      } finally {
        t.clock.advance(-14 * 60 * 1000);
      }
    });

    test("forged, missing or oversized tokens are refused with a clear answer", async () => {
      const forged = await finish("forged", { confirm: true });
      expect([forged.status, forged.body]).toEqual([401, { error: "this sign-in link is invalid, used or expired" }]);
      for (const body of [{}, { token: "" }, { token: "x".repeat(300) }, { token: 5 }]) {
        const res = await t.call("/api/FinishEmailLogin", body, { peer: nextPeer() });
        expect(res.status).toBe(400);
        expect(typeof res.body.error).toBe("string");
      }
      // The page without a token goes back to the sign-in form with the reason.
      for (const path of ["/login/link", "/api/EmailLoginCallback"]) {
        const res = await t.request(path);
        expect(res.status).toBe(302);
        expect(res.headers.get("location")).toStartWith("/login?error=link_invalid");
      }
    });

    test("open-redirect attempts in next are replaced by /dashboard", async () => {
      for (const next of [
        "//evil.com",
        "/\\evil.com",
        "https://evil.com/",
        "/%0a/evil.com",
        "/\t/evil.com",
        "javascript:alert(1)",
        "evil.com",
      ]) {
        const link = await mailedLink(`redir-${crypto.randomUUID().slice(0, 6)}@example.com`, next);
        const res = await finish(link.token, { browser: link.browser });
        expect(res.status).toBe(200);
        const location = res.body.next as string;
        expect(new URL(location, PUBLIC_URL).origin).toBe(PUBLIC_URL);
        expect(location).toBe(next === "/%0a/evil.com" ? "/%0a/evil.com" : "/dashboard");
      }
    });

    test("where the link lands is what was stored with it: a stored next cannot leave the origin by dot segments", async () => {
      const stored = await mailedLink(`dots-${crypto.randomUUID().slice(0, 6)}@example.com`, "/.//evil.test");
      const res = await finish(stored.token, { browser: stored.browser });
      expect(res.body.next).toBe("/dashboard");
      // The old callback's own query cannot add a next either: it only forwards the token.
      const other = await mailedLink(`attacker-${crypto.randomUUID().slice(0, 6)}@example.com`);
      const callback = await t.request(`/api/EmailLoginCallback?token=${other.token}&next=//evil.com`);
      expect(callback.headers.get("location")).toBe(`/login/link?token=${other.token}`);
    });

    test("AddUser mails the invited address where to sign in and answer", async () => {
      const admin = await t.onboardedUser();
      const email = `invited-${crypto.randomUUID().slice(0, 6)}@example.com`;
      expect((await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email }, { cookie: admin.cookie })).status).toBe(200);
      const mail = await smtp.waitFor(email);
      smtp.messages.splice(smtp.messages.indexOf(mail), 1);
      expect(mail.text).toContain(admin.email);
      expect(mail.text).toContain(`${PUBLIC_URL}/dashboard`);
      expect(mail.text).toContain("Nothing changes until you accept.");
    });

    test("an invalid address is refused with 400 and a JSON error", async () => {
      for (const body of [{ email: "not-an-email" }, {}, { email: "" }]) {
        const res = await t.call("/api/EmailLogin", body, { peer: nextPeer() });
        expect(res.status).toBe(400);
        expect(typeof res.body.error).toBe("string");
        expect(res.headers.get("x-trace-id")).toMatch(/^[A-Za-z0-9_-]{12,}$/);
      }
    });

    test("too many links for one address are rate limited, whichever clients ask", async () => {
      const email = "flood@example.com";
      for (let i = 0; i < 5; i++) expect((await t.call("/api/EmailLogin", { email }, { peer: nextPeer() })).status).toBe(200);
      const res = await t.call("/api/EmailLogin", { email }, { peer: nextPeer() });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    });

    test("one client asking for links to many addresses gets 429 with Retry-After after 5 a minute; other clients still sign in", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await t.call("/api/EmailLogin", { email: `spray-${i}@example.com` }, { peer: "203.0.113.77" })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const limited = await t.call("/api/EmailLogin", { email: "spray-x@example.com" }, { peer: "203.0.113.77" });
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("12");
      expect(limited.body.error).toBeString();
      expect(await t.db.$count(loginLinks, like(loginLinks.email, "spray-%"))).toBe(5);
      await mailedLink("someone-else@example.com");
      await smtp.waitFor("spray-4@example.com");
      smtp.messages.splice(0, smtp.messages.length);
    });

    test("guessing sign-in link secrets from one client gets 429 after 30 a minute", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++) statuses.push((await finish(`guess-${i}`, { confirm: true, peer: "203.0.113.88" })).status);
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      expect(statuses[30]).toBe(429);
      expect((await finish("guess", { confirm: true, peer: "203.0.113.89" })).status).toBe(401);
    });

    test("LogOut (the dashboard's link: a same-origin navigation) revokes the session server-side, clears the cookie and goes to /login", async () => {
      const u = await t.user();
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(200);
      const out = await t.request("/api/LogOut", {
        headers: {
          cookie: u.cookie,
          "sec-fetch-site": "same-origin",
          "sec-fetch-mode": "navigate",
          referer: `${PUBLIC_URL}/dashboard/x/live`,
        },
      });
      expect(out.status).toBe(302);
      expect(out.headers.get("location")).toBe("/login");
      expect(setCookieLine(out.res, SESSION_COOKIE)).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/);
      const [row] = await t.db.select().from(sessions).where(eq(sessions.id, u.sessionId));
      expect(row!.revokedAt).not.toBeNull();
      // The old cookie, replayed, no longer works.
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(401);
      expect((await t.call("/api/ListOrgs", {}, { cookie: u.cookie })).status).toBe(401);
    });

    test("LogOut from another site (a link, an image, a form) signs nobody out: back to the dashboard, the session holds", async () => {
      const u = await t.user();
      const attempts: Array<Record<string, string>> = [
        { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" },
        { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" },
        { "sec-fetch-site": "same-site", "sec-fetch-mode": "navigate" },
        { referer: "https://evil.example/page" },
        { referer: "not a url" },
      ];
      for (const headers of attempts) {
        const out = await t.request("/api/LogOut", { headers: { cookie: u.cookie, ...headers } });
        expect([out.status, out.headers.get("location")], JSON.stringify(headers)).toEqual([302, "/dashboard"]);
        expect(setCookieLine(out.res, SESSION_COOKIE)).toBeUndefined();
      }
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(200);
      // Typed into the address bar or opened from a bookmark: the person's own hand.
      const typed = await t.request("/api/LogOut", {
        headers: { cookie: u.cookie, "sec-fetch-site": "none", "sec-fetch-mode": "navigate" },
      });
      expect(typed.headers.get("location")).toBe("/login");
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(401);
    });

    test("LogOut without a session still redirects to /login", async () => {
      const out = await t.request("/api/LogOut");
      expect(out.status).toBe(302);
      expect(out.headers.get("location")).toBe("/login");
    });

    test("GetSelf: 401 without a session, with a tampered cookie, or after the session expired", async () => {
      const none = await t.request("/api/GetSelf");
      expect(none.status).toBe(401);
      expect(none.body).toEqual({ error: "not signed in" });

      const u = await t.user();
      const [name, token] = u.cookie.split("=") as [string, string];
      const [h, p, s] = token.split(".") as [string, string, string];
      const payload = JSON.parse(Buffer.from(p, "base64url").toString());
      const forged = Buffer.from(JSON.stringify({ ...payload, sub: crypto.randomUUID() })).toString("base64url");
      expect((await t.request("/api/GetSelf", { headers: { cookie: `${name}=${h}.${forged}.${s}` } })).status).toBe(401);
      expect((await t.request("/api/GetSelf", { headers: { cookie: `${name}=${h}.${p}.${s.slice(0, -2)}xx` } })).status).toBe(401);

      t.clock.advance(31 * 24 * 3600 * 1000);
      try {
        expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(401);
      } finally {
        t.clock.advance(-31 * 24 * 3600 * 1000);
      }
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(200);
    });
  });
}

describe("magic link without SMTP", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  }, 60_000);
  afterAll(() => t.close());

  test("goes to the server log as one line containing 'magic link' and the URL, which signs in", async () => {
    const lines = await captureLogs(async () => {
      const answer = await t.call("/api/EmailLogin", { email: "terminal@example.com" });
      expect(answer.status).toBe(200);
      // The login page says where the link went.
      expect(answer.body).toEqual({ delivery: "log" });
    });
    const hits = lines.filter((l) => l.includes("magic link"));
    expect(hits).toHaveLength(1);
    const url = LINK.exec(hits[0]!)?.[0];
    expect(url).toBeDefined();
    const res = await t.call("/api/FinishEmailLogin", { token: new URL(url!).searchParams.get("token"), confirm: true });
    expect(res.body).toEqual({ signedIn: true, next: "/dashboard" });
    const cookie = cookieFrom(res.res, SESSION_COOKIE)!;
    expect((await t.request("/api/GetSelf", { headers: { cookie } })).body.email).toBe("terminal@example.com");
  });

  test("an unreachable SMTP server answers 503 with a JSON error, and the link is not logged", async () => {
    const srv = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = srv.port;
    srv.stop(true);
    const down = await startTestApp({ backend: "pglite", env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    try {
      let status = 0;
      let body: unknown;
      const lines = await captureLogs(async () => {
        const res = await down.call("/api/EmailLogin", { email: "down@example.com" });
        status = res.status;
        body = res.body;
      });
      expect(status).toBe(503);
      expect(body).toEqual({ error: "could not send the sign-in e-mail; try again later" });
      expect(lines.join("\n")).not.toContain("/login/link?token=");
    } finally {
      await down.close();
    }
  });

  test("the session cookie is Secure when PUBLIC_URL is https", async () => {
    const secure = await startTestApp({ backend: "pglite", env: { PUBLIC_URL: "https://tapscope.example" } });
    try {
      const lines = await captureLogs(() =>
        secure.call("/api/EmailLogin", { email: "s@example.com" }, { origin: "https://tapscope.example" }),
      );
      const url = /https:\/\/tapscope\.example\/login\/link\?token=[A-Za-z0-9_-]+/.exec(lines.join("\n"))![0];
      const res = await secure.app.handle(
        new Request("https://tapscope.example/api/FinishEmailLogin", {
          method: "POST",
          headers: { origin: "https://tapscope.example", "content-type": "application/json" },
          body: JSON.stringify({ token: new URL(url).searchParams.get("token"), confirm: true }),
        }),
      );
      expect(setCookieLine(res, SESSION_COOKIE)).toContain("Secure");
    } finally {
      await secure.close();
    }
  });
});
