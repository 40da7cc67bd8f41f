import { afterAll, beforeAll, expect, test } from "bun:test";
import { saveAlertRule } from "~/services/alerts/save-alert-rule.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { signIn } from "~/services/auth/sign-in.ts";
import { onboardNewUser } from "~/services/namespaces/onboard-new-user.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { type Service, startNodeRuntime, startRedis } from "../support/cluster.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { startSmtpServer } from "../support/smtp.ts";

// Two server nodes' runtimes in one process, as a cluster runs them: each its own Redis connection (the broker), one
// PostgreSQL database, one ClickHouse (each node its own client), both evaluating alerts every second. The rule fires
// and resolves once, notified once by mail and once by webhook, whichever node holds the lease, also after the node
// that held it stops.

let redis: Service & { brokerUrl: string };
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let databaseUrl: string;
const hooks: string[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (req) => {
    hooks.push(JSON.parse(await req.text()).type);
    return new Response("ok");
  },
});

beforeAll(async () => {
  [redis, smtp, databaseUrl] = await Promise.all([startRedis(), startSmtpServer(), createTestDatabase()]);
}, 60_000);
afterAll(async () => {
  redis?.stop();
  await smtp?.close();
  receiver.stop(true);
});

async function node() {
  const store = await openClickHouseStore({ url: await clickhouseUrl() });
  const env = { SMTP_URL: smtp.url, WEBHOOKS_TO_PRIVATE_ADDRESSES: "1", ALERT_EVALUATION_SECONDS: "1" };
  const started = await startNodeRuntime(redis.brokerUrl, env, { databaseUrl, store });
  return {
    ...started,
    stop: async () => {
      await started.stop();
      await store.close();
    },
  };
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await Bun.sleep(50);
  return check();
}

test("alert rules are evaluated on one node at a time: one notification per change, also after the leader stops", async () => {
  const email = `ops-${crypto.randomUUID().slice(0, 8)}@example.com`;
  let namespaceId = "";
  const nodes = [await node(), await node()];
  try {
    // The namespace, its admin and the rule, in the shared database.
    const ctx = nodes[0]!.runtime.ctx;
    const user = await signIn({ ctx, email });
    const session = await createSession({ ctx, userId: user.userId });
    const principal = { kind: "user" as const, userId: user.userId, email, sessionId: session.sessionId };
    namespaceId = (await onboardNewUser({ ctx, principal, namespaceName: "cluster-alerts" })).namespace.namespaceId;
    await saveAlertRule({
      ctx,
      principal,
      namespaceId,
      rule: {
        name: "payments failing",
        metric: "server_errors",
        threshold: 50,
        windowMinutes: 1,
        minRequests: 4,
        endpoint: null,
        filterText: "",
        emails: [email],
        webhookUrl: `http://127.0.0.1:${receiver.port}/hook`,
      },
    });
    const store = await openClickHouseStore({ url: await clickhouseUrl() });
    const write = (status: number, n: number) =>
      store.insert(
        namespaceId,
        Array.from({ length: n }, () => tracedEvent({ time: Date.now() * 1000 - 1_000_000, http_resp_status_code: status })),
      );
    const mails = (subject: string) => smtp.messages.filter((m) => m.to.includes(email) && m.raw.includes(subject)).length;

    await write(500, 6);
    expect(await until(() => mails("FIRING") === 1 && hooks.length === 1, 20_000)).toBe(true);
    // Both nodes keep running rounds: nothing is sent again.
    await Bun.sleep(3_000);
    expect([mails("FIRING"), hooks]).toEqual([1, ["alert.fired"]]);
    const leaders = nodes.map((n) => n.runtime.alerts.holdsLease);
    expect(leaders.filter(Boolean)).toHaveLength(1);

    // The leader stops; the other takes the lease over once it lapses and resolves the rule.
    const leader = leaders.indexOf(true);
    await nodes[leader]!.stop();
    const other = nodes[1 - leader]!;
    await write(200, 60);
    expect(await until(() => mails("Resolved") === 1 && hooks.length === 2, 20_000)).toBe(true);
    await Bun.sleep(3_000);
    expect([mails("FIRING"), mails("Resolved"), hooks]).toEqual([1, 1, ["alert.fired", "alert.resolved"]]);
    expect(other.runtime.alerts.holdsLease).toBe(true);
    await store.dropNamespace(namespaceId);
    await store.close();
  } finally {
    for (const n of nodes) await n.stop();
  }
}, 90_000);
