import { afterAll, beforeAll, expect, test } from "bun:test";
import { connectRedisBroker } from "~/engines/cluster/broker.ts";
import { createRuntime, type Runtime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { startTestApp, type TestApp } from "../support/app.ts";
import { type Service, startRedis } from "../support/cluster.ts";
import { billingEnv, openPublisher } from "../support/publishers.ts";

// Two server nodes on one database and a real Redis, each listening: an org's publishers are counted at the upgrade in
// one set for the whole cluster, so tickets spread over both nodes still open no more sockets than the plan allows.
let redis: Service & { brokerUrl: string };
let t: TestApp;
type Node = {
  runtime: Runtime;
  base: string;
  socketUrl: (url: string) => string;
  stop: () => Promise<void>;
  /** Dies without a word: Redis hears nothing more from it (no renewals, no releases). */
  kill: () => Promise<void>;
};
let nodes: Node[] = [];

async function startNode(): Promise<Node> {
  const broker = await connectRedisBroker(redis.brokerUrl);
  const runtime = createRuntime({ config: t.config, db: t.db, now: t.clock.now, broker });
  await runtime.start();
  const server = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
  const port = server.server!.port!;
  return {
    runtime,
    base: `http://127.0.0.1:${port}`,
    socketUrl: (url) => {
      const u = new URL(url);
      return `ws://127.0.0.1:${port}${u.pathname}${u.search}`;
    },
    stop: async () => {
      await server.stop(true);
      await runtime.close();
    },
    kill: async () => {
      runtime.orgPublishers.stop();
      broker.close();
      await server.stop(true);
      await runtime.close();
    },
  };
}

beforeAll(async () => {
  redis = await startRedis();
  t = await startTestApp({ backend: "pglite", env: billingEnv });
  nodes = [await startNode(), await startNode()];
}, 60_000);
afterAll(async () => {
  for (const node of nodes) await node.stop();
  await t?.close();
  redis?.stop();
});

/** A ticket from JoinPublisher at `node`, or null when it answers that the org's containers are all running. */
async function ticketAt(node: Node, token: string): Promise<string | null> {
  const res = await fetch(`${node.base}/api/JoinPublisher`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: "{}",
  });
  if (res.status === 403) return null;
  expect(res.status).toBe(200);
  return node.socketUrl(((await res.json()) as { websocketUrl: string }).websocketUrl);
}

test("eight tickets from two nodes, opened at once on both: three publishers in the whole cluster", async () => {
  const admin = await t.onboardedUser();
  const { token } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body;
  const urls: string[] = [];
  for (let i = 0; i < 8; i++) urls.push((await ticketAt(nodes[i % 2]!, token)) as string);
  const opened = await Promise.all(urls.map(openPublisher));
  expect(opened.filter((o) => o.outcome === "ready")).toHaveLength(3);
  const held = nodes.map((n) => n.runtime.orgPublishers.local().get(admin.orgId) ?? 0);
  expect(held[0]! + held[1]!).toBe(3);

  // A node that dies without a word gives its places back within their lifetime (seconds); the survivor then takes them.
  const dying = held[0]! > 0 ? 0 : 1;
  const survivor = nodes[1 - dying]!;
  await nodes[dying]!.kill();
  nodes.splice(dying, 1);
  const deadline = Date.now() + 15_000;
  let reopened = 0;
  while (reopened < held[dying]! && Date.now() < deadline) {
    const url = await ticketAt(survivor, token);
    const attempt = url ? await openPublisher(url) : null;
    if (attempt?.outcome === "ready") reopened++;
    else await Bun.sleep(250);
  }
  expect(reopened).toBe(held[dying]!);
  // Full again: the next is refused, at JoinPublisher or at the upgrade.
  const last = await ticketAt(survivor, token);
  if (last) expect((await openPublisher(last)).outcome).toBe("refused");
  for (const o of opened) if (o.outcome === "ready") o.ws.close();
}, 40_000);
