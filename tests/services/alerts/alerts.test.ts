import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { eq } from "drizzle-orm";
import { alertDeliveries } from "#db/schema/index.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { evaluateAlertRules } from "~/services/alerts/evaluate-alert-rules.ts";
import { queryThroughWorkers } from "~/services/alerts/query-through-workers.ts";
import { sendAlertDeliveries } from "~/services/alerts/send-alert-deliveries.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { startTestApp, type TestApp } from "../../support/app.ts";
import { tracedEvent } from "../../support/event-factory.ts";
import { startSmtpServer } from "../../support/smtp.ts";

// Alert rules evaluated against a real store (DuckDB), notifying through a real SMTP server and a local webhook
// receiver, as the scheduler's rounds do (engines/alerts). The clock is the test's.

type Received = { headers: Headers; body: string };

function startReceiver() {
  const received: Received[] = [];
  let answers: number[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      received.push({ headers: req.headers, body: await req.text() });
      return new Response("ok", { status: answers.shift() ?? 200 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks/tapscope`,
    received,
    /** The next answers' statuses (200 after them). */
    answerWith: (statuses: number[]) => {
      answers = [...statuses];
    },
    stop: () => server.stop(true),
  };
}

/** A receiver's check of a delivery: the signature's HMAC over "<t>.<body>" under the rule's secret. */
function isSigned(r: Received, secret: string): boolean {
  const header = r.headers.get("x-tapscope-signature") ?? "";
  const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
  return !!t && createHmac("sha256", secret).update(`${t}.${r.body}`).digest("hex") === v1;
}

describe("alerts: evaluation and notification", () => {
  let t: TestApp;
  let store: EventStore;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  const receiver = startReceiver();
  let admin: Awaited<ReturnType<TestApp["onboardedUser"]>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    store = await openDuckDbStore({ path: ":memory:" });
    t = await startTestApp({ backend: "pglite", store, env: { SMTP_URL: smtp.url, WEBHOOKS_TO_PRIVATE_ADDRESSES: "1" } });
    admin = await t.onboardedUser(`admin-${crypto.randomUUID().slice(0, 6)}@example.com`);
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await store.close();
    await smtp.close();
    receiver.stop();
  });

  const evaluate = () => evaluateAlertRules({ ctx: t.ctx, query: queryThroughWorkers(t.runtime.workers) });
  const deliver = () =>
    sendAlertDeliveries({ ctx: t.ctx, options: { maxAttempts: 3, firstRetryMs: 10_000, claimMs: 60_000, timeoutMs: 5_000, batch: 50 } });

  /** Requests in the last minute by the test's clock, as ingest would have stored them. */
  async function served(namespaceId: string, count: number, status: number, overrides: Partial<TracedEvent> = {}) {
    const nowUs = t.clock.now().getTime() * 1000;
    const events = Array.from({ length: count }, (_, i) =>
      tracedEvent({
        time: nowUs - 30_000_000 + i,
        service: "shop",
        http_req_method: "POST",
        http_req_path: `/orders/${i}`,
        http_route: "/orders/{id}",
        http_resp_status_code: status,
        ...overrides,
      }),
    );
    await store.insert(namespaceId, events);
  }

  async function saveRule(namespaceId: string, cookie: string, rule: Record<string, unknown>) {
    const res = await t.call("/api/SaveAlertRule", { namespaceId, rule }, { cookie });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    return res.body as { rule: { ruleId: string }; webhookSecret: string | null };
  }

  const alerts = async (namespaceId: string) => (await t.call("/api/ListAlerts", { namespaceId }, { cookie: admin.cookie })).body;

  test("an endpoint's error rate over its threshold fires once, mails its members and calls the signed webhook; it resolves once", async () => {
    const { namespaceId } = admin;
    const { webhookSecret } = await saveRule(namespaceId, admin.cookie, {
      name: "orders failing",
      metric: "server_errors",
      threshold: 20,
      windowMinutes: 5,
      minRequests: 10,
      endpoint: { service: "shop", host: "", method: "POST", route: "/orders/{id}" },
      filterText: "",
      emails: [admin.email],
      webhookUrl: receiver.url,
    });
    // Below the minimum count: nothing, however bad.
    await served(namespaceId, 5, 503);
    expect(await evaluate()).toBe(0);
    expect((await alerts(namespaceId)).rules[0]).toMatchObject({ state: "ok", lastValue: 100, lastRequests: 5 });
    // Other endpoints' errors do not count.
    await served(namespaceId, 50, 500, { http_route: "/health", http_req_method: "GET" });
    expect(await evaluate()).toBe(0);

    await served(namespaceId, 15, 200);
    // 5 failed of 20: 25 % > 20 %.
    expect(await evaluate()).toBe(1);
    expect(await deliver()).toBe(2);
    const mail = await smtp.waitFor(admin.email);
    expect(mail.raw).toContain("Subject: [Tapscope] FIRING: orders failing in");
    expect(mail.text).toContain("5xx errors 25 % (threshold 20 %), over the last 5 min, 20 requests.");
    expect(mail.text).toContain(
      `/dashboard/${encodeURIComponent((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie })).body.namespaces[0].name)}/endpoints`,
    );
    expect(receiver.received).toHaveLength(1);
    const hook = receiver.received[0]!;
    expect(isSigned(hook, webhookSecret as string)).toBe(true);
    expect(isSigned(hook, "whsec_another")).toBe(false);
    const payload = JSON.parse(hook.body);
    expect(payload).toMatchObject({
      type: "alert.fired",
      alert: { value: 25, requests: 20, threshold: 20, rule: { name: "orders failing" } },
    });
    expect(hook.headers.get("x-tapscope-event")).toBe("alert.fired");
    expect(JSON.stringify(payload)).not.toContain(admin.email);

    // Rounds that find it still firing notify nobody again.
    expect(await evaluate()).toBe(0);
    expect(await deliver()).toBe(0);
    expect(receiver.received).toHaveLength(1);

    t.clock.advance(60_000);
    await served(namespaceId, 200, 200);
    expect(await evaluate()).toBe(1);
    expect(await deliver()).toBe(2);
    expect(receiver.received).toHaveLength(2);
    expect(JSON.parse(receiver.received[1]!.body)).toMatchObject({ type: "alert.resolved" });
    expect(smtp.messages.filter((m) => m.to.includes(admin.email)).map((m) => /Subject: \[Tapscope\] (\w+)/.exec(m.raw)?.[1])).toEqual([
      "FIRING",
      "Resolved",
    ]);
    const listed = await alerts(namespaceId);
    expect(listed.rules[0].state).toBe("ok");
    expect(listed.events.map((e: { kind: string }) => e.kind)).toEqual(["resolved", "fired"]);
    expect(listed.deliveries.every((d: { status: string; attempts: number }) => d.status === "sent" && d.attempts === 1)).toBe(true);
    expect(listed.deliveries).toHaveLength(4);
  });

  test("a latency rule on a filter: p95 over the window, in milliseconds", async () => {
    const u = await t.onboardedUser();
    await saveRule(u.namespaceId, u.cookie, {
      name: "slow api",
      metric: "p95",
      threshold: 200,
      windowMinutes: 10,
      minRequests: 20,
      endpoint: null,
      filterText: 'request.route startsWith "/orders"',
      emails: [u.email],
      webhookUrl: null,
    });
    await served(u.namespaceId, 90, 200, { http_duration: 10_000 });
    await served(u.namespaceId, 10, 200, { http_duration: 900_000 });
    // Slow requests elsewhere are not the filter's.
    await served(u.namespaceId, 100, 200, { http_duration: 5_000_000, http_route: "/reports" });
    expect(await evaluate()).toBe(1);
    const rule = (await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.rules[0];
    expect(rule).toMatchObject({ state: "firing", lastValue: 900, lastRequests: 100 });
    await deliver();
    expect((await smtp.waitFor(u.email)).text).toContain("p95 900 ms (threshold 200 ms)");
  });

  test("a webhook that fails is retried with backoff; each attempt is in the delivery log", async () => {
    const u = await t.onboardedUser();
    await saveRule(u.namespaceId, u.cookie, {
      name: "retry me",
      metric: "all_errors",
      threshold: 1,
      windowMinutes: 5,
      minRequests: 1,
      endpoint: null,
      filterText: "",
      emails: [],
      webhookUrl: receiver.url,
    });
    await served(u.namespaceId, 3, 404);
    receiver.answerWith([500, 503]);
    const before = receiver.received.length;
    expect(await evaluate()).toBe(1);
    expect(await deliver()).toBe(0);
    let [d] = (await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.deliveries;
    expect(d).toMatchObject({
      channel: "webhook",
      status: "pending",
      attempts: 1,
      lastError: "the webhook answered 500",
      responseStatus: 500,
    });
    // Not due before its backoff.
    expect(await deliver()).toBe(0);
    expect(receiver.received.length).toBe(before + 1);
    t.clock.advance(10_001);
    expect(await deliver()).toBe(0);
    [d] = (await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.deliveries;
    expect(d).toMatchObject({ status: "pending", attempts: 2, lastError: "the webhook answered 503" });
    // The second wait is three times the first.
    t.clock.advance(10_001);
    expect(await deliver()).toBe(0);
    t.clock.advance(20_000);
    expect(await deliver()).toBe(1);
    [d] = (await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.deliveries;
    expect(d).toMatchObject({ status: "sent", attempts: 3, lastError: null, responseStatus: 200 });
    expect(receiver.received.length).toBe(before + 3);
  });

  test("two evaluations at once (two nodes, a lease handed over) record one change and one set of notifications", async () => {
    const u = await t.onboardedUser();
    await saveRule(u.namespaceId, u.cookie, {
      name: "raced",
      metric: "server_errors",
      threshold: 10,
      windowMinutes: 5,
      minRequests: 1,
      endpoint: null,
      filterText: "",
      emails: [u.email],
      webhookUrl: receiver.url,
    });
    await served(u.namespaceId, 4, 500);
    const recorded = await Promise.all([evaluate(), evaluate(), evaluate()]);
    expect(recorded.reduce((a, b) => a + b, 0)).toBe(1);
    const sent = await Promise.all([deliver(), deliver()]);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(2);
    const rows = await t.db.select().from(alertDeliveries).where(eq(alertDeliveries.namespaceId, u.namespaceId));
    expect(rows.map((r) => [r.channel, r.status, r.attempts]).sort()).toEqual([
      ["email", "sent", 1],
      ["webhook", "sent", 1],
    ]);
  });

  test("without WEBHOOKS_TO_PRIVATE_ADDRESSES a webhook to a private address is not called, and the log says why", async () => {
    const strict = await startTestApp({ backend: "pglite", store, env: { SMTP_URL: smtp.url } });
    try {
      const u = await strict.onboardedUser();
      const saved = await strict.call(
        "/api/SaveAlertRule",
        {
          namespaceId: u.namespaceId,
          rule: {
            name: "inside",
            metric: "server_errors",
            threshold: 1,
            windowMinutes: 5,
            minRequests: 1,
            endpoint: null,
            filterText: "",
            emails: [],
            webhookUrl: receiver.url,
          },
        },
        { cookie: u.cookie },
      );
      expect(saved.status).toBe(200);
      const nowUs = strict.clock.now().getTime() * 1000;
      await store.insert(u.namespaceId, [tracedEvent({ time: nowUs - 1000, http_resp_status_code: 500 })]);
      const before = receiver.received.length;
      expect(await evaluateAlertRules({ ctx: strict.ctx, query: queryThroughWorkers(strict.runtime.workers) })).toBe(1);
      expect(await sendAlertDeliveries({ ctx: strict.ctx })).toBe(0);
      expect(receiver.received.length).toBe(before);
      const [d] = (await strict.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.deliveries;
      expect(d.lastError).toBe("the webhook host 127.0.0.1 is a private address (127.0.0.1); WEBHOOKS_TO_PRIVATE_ADDRESSES=1 allows it");
    } finally {
      await strict.close();
    }
  });

  test("a member who left is not mailed", async () => {
    const u = await t.onboardedUser();
    const member = await t.user();
    await t.addMember(u, member);
    await saveRule(u.namespaceId, u.cookie, {
      name: "members only",
      metric: "server_errors",
      threshold: 1,
      windowMinutes: 5,
      minRequests: 1,
      endpoint: null,
      filterText: "",
      emails: [member.email, u.email],
      webhookUrl: null,
    });
    expect((await t.call("/api/RemoveUser", { namespaceId: u.namespaceId, userId: member.userId }, { cookie: u.cookie })).status).toBe(200);
    await served(u.namespaceId, 2, 500);
    expect(await evaluate()).toBe(1);
    await deliver();
    await smtp.waitFor(u.email);
    expect(smtp.messages.some((m) => m.to.includes(member.email) && m.raw.includes("[Tapscope] FIRING"))).toBe(false);
  });
});
