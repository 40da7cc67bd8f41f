import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { listenTestApp, startTestApp, type TestApp } from "../support/app.ts";
import { billingEnv, openPublisher } from "../support/publishers.ts";

/**
 * The plans' containers limit counts at the publish socket's upgrade: tickets taken while nothing was connected do not
 * all get in (issue 28: 8 connected on a 3-container plan).
 */
describe("containers limit at the upgrade", () => {
  let t: TestApp;
  let listener: ReturnType<typeof listenTestApp>;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite", env: billingEnv });
    listener = listenTestApp(t);
  }, 60_000);
  afterAll(async () => {
    await listener?.stop();
    await t?.close();
  });

  /** JoinPublisher at the listening app, as the CLI asks it. */
  async function join(token: string): Promise<{ status: number; body: Record<string, string> }> {
    const res = await fetch(`${listener.base}/api/JoinPublisher`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: "{}",
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  }

  async function tickets(token: string, n: number): Promise<string[]> {
    const urls: string[] = [];
    for (let i = 0; i < n; i++) {
      const joined = await join(token);
      expect(joined.status).toBe(200);
      urls.push(listener.socketUrl(joined.body.websocketUrl!));
    }
    return urls;
  }

  test("eight tickets taken before any connects: three sockets open on the Free plan, five are refused", async () => {
    const admin = await t.onboardedUser();
    const { token } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body;
    const urls = await tickets(token, 8);
    const opened = await Promise.all(urls.map(openPublisher));
    const ready = opened.filter((o) => o.outcome === "ready");
    expect(ready).toHaveLength(3);
    expect(listener.runtime.orgPublishers.count(admin.orgId)).toBe(3);

    // Now JoinPublisher itself says why, as the CLI prints it.
    const refused = await join(token);
    expect([refused.status, refused.body.error]).toEqual([
      403,
      "The Free plan allows 3 containers (tapscope runs publishing at once) per organization and 3 are running. Upgrade on the billing screen (/dashboard/billing), or stop one.",
    ]);

    // One stops: its place is free for the next run, and then the org is full again.
    const [first] = ready as Array<{ ws: WebSocket }>;
    first!.ws.close();
    const deadline = Date.now() + 5_000;
    while (listener.runtime.orgPublishers.count(admin.orgId) !== 2 && Date.now() < deadline) await Bun.sleep(20);
    const [next, over] = await tickets(token, 2);
    const [a, b] = await Promise.all([openPublisher(next!), openPublisher(over!)]);
    expect([a.outcome, b.outcome].sort()).toEqual(["ready", "refused"]);
    for (const o of [...opened, a, b]) if (o.outcome === "ready") o.ws.close();
  }, 30_000);

  test("a ticket whose socket never opens holds its place only a few seconds", async () => {
    const admin = await t.onboardedUser();
    const reserved = await listener.runtime.orgPublishers.reserve(admin.orgId, 1);
    expect(reserved).toBeString();
    expect(await listener.runtime.orgPublishers.reserve(admin.orgId, 1)).toBeNull();
    const deadline = Date.now() + 8_000;
    let again: string | null = null;
    while (again === null && Date.now() < deadline) {
      await Bun.sleep(250);
      again = await listener.runtime.orgPublishers.reserve(admin.orgId, 1);
    }
    expect(again).toBeString();
  }, 15_000);

  test("without billing there is no containers limit: every ticket opens", async () => {
    const off = await startTestApp({ backend: "pglite" });
    const offListener = listenTestApp(off);
    try {
      const admin = await off.onboardedUser();
      const { token } = (await off.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body;
      const urls: string[] = [];
      for (let i = 0; i < 8; i++)
        urls.push(offListener.socketUrl((await off.call("/api/JoinPublisher", {}, { bearer: token })).body.websocketUrl));
      const opened = await Promise.all(urls.map(openPublisher));
      expect(opened.filter((o) => o.outcome === "ready")).toHaveLength(8);
      for (const o of opened) if (o.outcome === "ready") o.ws.close();
    } finally {
      await offListener.stop();
      await off.close();
    }
  }, 30_000);
});
