import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, like } from "drizzle-orm";
import { loginLinks, sessions } from "#db/schema/index.ts";
import { sha256Hex } from "~/lib/ids.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { backends, captureLogs, cookieFrom, PUBLIC_URL, setCookieLine, startTestApp, type TestApp } from "../support/app.ts";
import { startSmtpServer } from "../support/smtp.ts";

const LINK = /http:\/\/tapscope\.test\/api\/EmailLoginCallback\?token=[A-Za-z0-9_-]+/;

function linkPath(url: string): string {
  return url.slice(PUBLIC_URL.length);
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

    async function mailedLink(email: string, next?: string): Promise<string> {
      const res = await t.call("/api/EmailLogin", next === undefined ? { email } : { email, next }, { peer: nextPeer() });
      expect(res.status).toBe(200);
      const mail = await smtp.waitFor(email.toLowerCase());
      smtp.messages.splice(smtp.messages.indexOf(mail), 1);
      const url = LINK.exec(mail.text)?.[0];
      if (!url) throw new Error(`no link in mail:\n${mail.text}`);
      return url;
    }

    test("the link from the real e-mail signs in, sets an httpOnly Lax cookie and lands on next", async () => {
      const url = await mailedLink("Bob@Example.com", "/dashboard/bob/tokens?x=1");
      const res = await t.request(linkPath(url));
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe("/dashboard/bob/tokens?x=1");
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

    test("without next the link lands on /dashboard", async () => {
      const res = await t.request(linkPath(await mailedLink("nonext@example.com")));
      expect(res.headers.get("location")).toBe("/dashboard");
    });

    test("only the SHA-256 of the link secret is stored", async () => {
      const url = await mailedLink("hash@example.com");
      const secret = new URL(url).searchParams.get("token")!;
      const rows = await t.db.select().from(loginLinks).where(eq(loginLinks.email, "hash@example.com"));
      expect(rows).toHaveLength(1);
      expect(rows[0]!.tokenHash).toBe(sha256Hex(secret));
      expect(JSON.stringify(rows)).not.toContain(secret);
    });

    test("a link works once", async () => {
      const url = await mailedLink("once@example.com");
      expect(cookieFrom((await t.request(linkPath(url))).res, SESSION_COOKIE)).toBeDefined();
      const second = await t.request(linkPath(url));
      expect(second.status).toBe(302);
      expect(second.headers.get("location")).toStartWith("/login?error=");
      expect(cookieFrom(second.res, SESSION_COOKIE)).toBeUndefined();
    });

    test("a link expires after 15 minutes", async () => {
      const url = await mailedLink("late@example.com");
      t.clock.advance(15 * 60 * 1000 + 1000);
      try {
        const res = await t.request(linkPath(url));
        expect(res.headers.get("location")).toStartWith("/login?error=");
        expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
      } finally {
        t.clock.advance(-(15 * 60 * 1000 + 1000));
      }
      const fresh = await mailedLink("late@example.com");
      t.clock.advance(14 * 60 * 1000);
      try {
        expect(cookieFrom((await t.request(linkPath(fresh))).res, SESSION_COOKIE)).toBeDefined();
      } finally {
        t.clock.advance(-14 * 60 * 1000);
      }
    });

    test("forged or missing tokens are refused", async () => {
      for (const path of ["/api/EmailLoginCallback?token=forged", "/api/EmailLoginCallback"]) {
        const res = await t.request(path);
        expect(res.status).toBe(302);
        expect(res.headers.get("location")).toStartWith("/login?error=");
        expect(cookieFrom(res.res, SESSION_COOKIE)).toBeUndefined();
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
        const res = await t.request(linkPath(await mailedLink(`redir-${crypto.randomUUID().slice(0, 6)}@example.com`, next)));
        expect(res.status).toBe(302);
        const location = res.headers.get("location")!;
        expect(new URL(location, PUBLIC_URL).origin).toBe(PUBLIC_URL);
        expect(location).toBe(next === "/%0a/evil.com" ? "/%0a/evil.com" : "/dashboard");
      }
    });

    test("a next given on the link itself cannot override the stored one", async () => {
      const url = await mailedLink("override@example.com", "/dashboard/mine/live");
      const res = await t.request(`${linkPath(url)}&next=//evil.com`);
      expect(res.headers.get("location")).toBe("/dashboard/mine/live");
    });

    test("the callback ignores a next in its own URL, and a stored next cannot leave the origin by dot segments", async () => {
      // Login CSRF with an open redirect: a link minted for the attacker's address, sent on with &next=.
      const url = await mailedLink(`attacker-${crypto.randomUUID().slice(0, 6)}@example.com`);
      const callback = await t.request(`${linkPath(url)}&next=${encodeURIComponent("/dashboard/attacker-ns/live")}`);
      expect(callback.status).toBe(302);
      expect(callback.headers.get("location")).toBe("/dashboard");
      const dotted = await mailedLink(`attacker-${crypto.randomUUID().slice(0, 6)}@example.com`);
      expect((await t.request(`${linkPath(dotted)}&next=${encodeURIComponent("/.//evil.test")}`)).headers.get("location")).toBe(
        "/dashboard",
      );

      const stored = await mailedLink(`dots-${crypto.randomUUID().slice(0, 6)}@example.com`, "/.//evil.test");
      const res = await t.request(linkPath(stored));
      expect(res.status).toBe(302);
      const location = res.headers.get("location")!;
      expect(location).toBe("/dashboard");
      expect(new URL(location, PUBLIC_URL).origin).toBe(PUBLIC_URL);
    });

    test("AddUser mails the invited address a link to sign in", async () => {
      const admin = await t.onboardedUser();
      const email = `invited-${crypto.randomUUID().slice(0, 6)}@example.com`;
      expect((await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email }, { cookie: admin.cookie })).status).toBe(200);
      const mail = await smtp.waitFor(email);
      smtp.messages.splice(smtp.messages.indexOf(mail), 1);
      expect(mail.text).toContain(admin.email);
      expect(mail.text).toContain(`${PUBLIC_URL}/login`);
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
      for (let i = 0; i < 31; i++) {
        statuses.push((await t.request(`/api/EmailLoginCallback?token=guess-${i}`, {}, { peer: "203.0.113.88" })).status);
      }
      expect(statuses.slice(0, 30).every((s) => s === 302)).toBe(true);
      expect(statuses[30]).toBe(429);
      expect((await t.request("/api/EmailLoginCallback?token=guess", {}, { peer: "203.0.113.89" })).status).toBe(302);
    });

    test("LogOut revokes the session server-side, clears the cookie and goes to /login", async () => {
      const u = await t.user();
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(200);
      const out = await t.request("/api/LogOut", { headers: { cookie: u.cookie } });
      expect(out.status).toBe(302);
      expect(out.headers.get("location")).toBe("/login");
      expect(setCookieLine(out.res, SESSION_COOKIE)).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/);
      const [row] = await t.db.select().from(sessions).where(eq(sessions.id, u.sessionId));
      expect(row!.revokedAt).not.toBeNull();
      // The old cookie, replayed, no longer works.
      expect((await t.request("/api/GetSelf", { headers: { cookie: u.cookie } })).status).toBe(401);
      expect((await t.call("/api/ListOrgs", {}, { cookie: u.cookie })).status).toBe(401);
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
      expect((await t.call("/api/EmailLogin", { email: "terminal@example.com" })).status).toBe(200);
    });
    const hits = lines.filter((l) => l.includes("magic link"));
    expect(hits).toHaveLength(1);
    const url = LINK.exec(hits[0]!)?.[0];
    expect(url).toBeDefined();
    const res = await t.request(url!.slice(PUBLIC_URL.length));
    expect(res.headers.get("location")).toBe("/dashboard");
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
      expect(lines.join("\n")).not.toContain("EmailLoginCallback?token=");
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
      const url = /https:\/\/tapscope\.example\/api\/EmailLoginCallback\?token=[A-Za-z0-9_-]+/.exec(lines.join("\n"))![0];
      const res = await secure.app.handle(new Request(url));
      expect(setCookieLine(res, SESSION_COOKIE)).toContain("Secure");
    } finally {
      await secure.close();
    }
  });
});
