import { afterAll, beforeAll, expect, test } from "bun:test";
import { limitsEveryMs } from "~/engines/cluster/cluster-node.ts";
import { type Service, startNodeRuntime, startRedis } from "../support/cluster.ts";
import { sampleEvent } from "../support/publish-server.ts";

// Two server nodes' runtimes in one process, each with its own connection to a real Redis: what one node grants under a
// rate limit, or counts as a connected publisher, the other takes into account.
let redis: Service & { brokerUrl: string };
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());

async function node(rateLimit: number) {
  const { runtime, stop } = await startNodeRuntime(redis.brokerUrl, { INGEST_RATE_LIMIT: String(rateLimit) });
  return { ...runtime, stop };
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
    await a.stop();
    await b.stop();
  }
}, 30_000);

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
    await a.stop();
    const gone = Date.now() + 8000;
    while (b.orgPublishers.count("org-1") !== 0 && Date.now() < gone) await Bun.sleep(100);
    expect(b.orgPublishers.count("org-1")).toBe(0);
    expect(b.hub.stats({ kind: "namespace", namespaceId: target.namespaceId! }).numPublishers).toBe(0);
  } finally {
    await a.stop();
    await b.stop();
  }
}, 30_000);

test("a client's sign-in budget holds across nodes: five e-mail sign-ins a minute in all, whichever nodes they reach", async () => {
  const [a, b] = [await node(0), await node(0)];
  try {
    for (let i = 0; i < 5; i++) a.clientLimits.admit("emailLogin", "203.0.113.7");
    await Bun.sleep(limitsEveryMs * 3);
    expect(() => b.clientLimits.admit("emailLogin", "203.0.113.7")).toThrow("too many requests");
    // Another address is not affected.
    expect(() => b.clientLimits.admit("emailLogin", "203.0.113.8")).not.toThrow();
  } finally {
    await a.stop();
    await b.stop();
  }
}, 30_000);
