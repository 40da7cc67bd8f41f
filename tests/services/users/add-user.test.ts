import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { captureLogs, startTestApp, type TestApp } from "../../support/app.ts";
import { startSmtpServer } from "../../support/smtp.ts";

// An invitation never vanishes: without SMTP it goes to the server log (as sign-in links do), and the answer says so,
// so the Users screen can tell the admin.
describe("invitations without SMTP", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  }, 60_000);
  afterAll(() => t.close());

  test("the invitation is logged with whom to tell and where they sign in; the answer says it was logged", async () => {
    const admin = await t.onboardedUser();
    let answer: { status: number; body: unknown } = { status: 0, body: null };
    const lines = await captureLogs(async () => {
      answer = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "New.Person@Example.test" }, { cookie: admin.cookie });
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ isPending: true, delivery: "log" });
    const line = lines.find((l) => l.includes("invitation for new.person@example.test"));
    expect(line).toBeDefined();
    expect(line).toContain(`${t.config.publicUrl}/dashboard`);
    expect(line).toContain(admin.email);

    // Inviting again sends (and logs) nothing more.
    const again = await captureLogs(async () => {
      answer = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "new.person@example.test" }, { cookie: admin.cookie });
    });
    expect(answer.body).toEqual({ isPending: true });
    expect(again.filter((l) => l.includes("invitation for"))).toEqual([]);
  });
});

describe("invitations with SMTP", () => {
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ backend: "pglite", env: { SMTP_URL: smtp.url } });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  test("the answer says it was e-mailed, and the mail arrives", async () => {
    const admin = await t.onboardedUser();
    const answer = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "mailed@example.test" }, { cookie: admin.cookie });
    expect(answer.body).toEqual({ isPending: true, delivery: "email" });
    for (let i = 0; i < 100 && !smtp.messages.some((m) => m.to.includes("mailed@example.test")); i++) await Bun.sleep(50);
    expect(smtp.messages.some((m) => m.to.includes("mailed@example.test"))).toBe(true);
  });
});
