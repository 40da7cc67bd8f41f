import { afterAll, beforeAll, expect, test } from "bun:test";
import { connectRedisBroker } from "~/engines/cluster/broker.ts";
import { ClusterNode, limitsEveryMs } from "~/engines/cluster/cluster-node.ts";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { ClientLimits } from "~/engines/limits/client-limits.ts";
import { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import { LiveHub } from "~/engines/live/hub.ts";
import { sampleEvent } from "../agent/publish/server.ts";
import { type Service, startRedis } from "../support/cluster.ts";

// Two server nodes' engines in one process, each with its own connection to a real Redis: what one node grants under a
// rate limit, or counts as a connected publisher, the other takes into account.
let redis: Service & { brokerUrl: string };
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());

async function node(rateLimit: number) {
  const broker = await connectRedisBroker(redis.brokerUrl);
  const sinks = new EventSinks();
  const hub = new LiveHub();
  sinks.add(hub);
  const ingest = new Ingest(sinks, { rateLimit });
  const orgPublishers = new OrgPublishers();
  const clientLimits = new ClientLimits({ config: { trustProxy: [], anonymousLinksPerHour: 100 } });
  const cluster = new ClusterNode({ broker, hub, ingest, orgPublishers, clientLimits });
  sinks.add(cluster);
  await cluster.start();
  return {
    hub,
    ingest,
    clientLimits,
    orgPublishers,
    stop: () => {
      cluster.stop();
      broker.close();
    },
  };
}

const target = { namespaceId: crypto.randomUUID(), linkId: null };
const message = (seq: number, n: number) => JSON.stringify({ type: "events", seq, events: Array.from({ length: n }, () => sampleEvent()) });

test("a namespace's rate limit holds across nodes: what node A granted, node B no longer grants (error within one sharing interval)", async () => {
  // 50 events/s with a burst of ten seconds' worth: 500 in all before refills.
  const [a, b] = [await node(50), await node(50)];
  try {
    const first = a.ingest.handle(target, message(1, 400));
    expect(first.type === "ack" && first.accepted).toBe(400);
    await Bun.sleep(limitsEveryMs * 3);
    const second = b.ingest.handle(target, message(1, 400));
    // Alone, node B would grant all 400; it grants what is left of the shared 500 (plus the refill meanwhile).
    expect(second.type === "ack" && second.accepted).toBeLessThanOrEqual(100 + 50);
    expect(second.type === "ack" && second.rateLimited).toBeGreaterThanOrEqual(250);
  } finally {
    a.stop();
    b.stop();
  }
}, 20_000);

test("publishers connected to one node count on the other (containers limit, viewers' count); a node that goes silent stops counting", async () => {
  const [a, b] = [await node(0), await node(0)];
  try {
    a.orgPublishers.connected("org-1");
    a.orgPublishers.connected("org-1");
    a.hub.publisherConnected(target);
    const deadline = Date.now() + 3000;
    while (b.orgPublishers.count("org-1") !== 2 && Date.now() < deadline) await Bun.sleep(20);
    expect(b.orgPublishers.count("org-1")).toBe(2);
    expect(b.hub.stats({ kind: "namespace", namespaceId: target.namespaceId! }).numPublishers).toBe(1);
    // Node A dies without a word: within the presence TTL node B no longer counts its publishers.
    a.stop();
    const gone = Date.now() + 8000;
    while (b.orgPublishers.count("org-1") !== 0 && Date.now() < gone) await Bun.sleep(100);
    expect(b.orgPublishers.count("org-1")).toBe(0);
    expect(b.hub.stats({ kind: "namespace", namespaceId: target.namespaceId! }).numPublishers).toBe(0);
  } finally {
    b.stop();
  }
}, 20_000);

test("a client's sign-in budget holds across nodes: five e-mail sign-ins a minute in all, whichever nodes they reach", async () => {
  const [a, b] = [await node(0), await node(0)];
  try {
    for (let i = 0; i < 5; i++) a.clientLimits.admit("emailLogin", "203.0.113.7");
    await Bun.sleep(limitsEveryMs * 3);
    expect(() => b.clientLimits.admit("emailLogin", "203.0.113.7")).toThrow("too many requests");
    // Another address is not affected.
    expect(() => b.clientLimits.admit("emailLogin", "203.0.113.8")).not.toThrow();
  } finally {
    a.stop();
    b.stop();
  }
}, 20_000);
