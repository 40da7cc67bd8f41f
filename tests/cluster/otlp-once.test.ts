import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { namespaces, orgs } from "#db/schema/index.ts";
import { connectRedisBroker } from "~/engines/cluster/broker.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { createRuntime, type Runtime } from "~/runtime.ts";
import { type Service, startRedis } from "../support/cluster.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { createTestPglite } from "../support/pglite.ts";

// Two server nodes on one database and a real Redis, both exporting to the same collector: the events one node accepts
// reach the other's live view through the broker, and the collector still gets each of them once.
let redis: Service & { brokerUrl: string };
let receiver: OtlpReceiver;
const dataDir = mkdtempSync(join(tmpdir(), "tapscope-otlp-cluster-"));

beforeAll(async () => {
  [redis, receiver] = await Promise.all([startRedis(), startOtlpReceiver()]);
}, 30_000);
afterAll(() => {
  redis?.stop();
  receiver?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test("each event is exported once, by the node that accepted it, while the other node shows it live", async () => {
  const database = await createTestPglite();
  const config = parseConfig({
    DATA_DIR: dataDir,
    SESSION_SECRET: "test-session-secret-0123456789abcdef",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base,
  });
  const [org] = await database.db.insert(orgs).values({ name: "cluster" }).returning();
  const [ns] = await database.db.insert(namespaces).values({ orgId: org!.id, name: "shop" }).returning();
  const nodes: Runtime[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const runtime = createRuntime({ config, db: database.db, broker: await connectRedisBroker(redis.brokerUrl) });
      await runtime.start();
      nodes.push(runtime);
    }
    const [a, b] = nodes as [Runtime, Runtime];
    const seen: string[] = [];
    b.hub.subscribe(
      { kind: "namespace", namespaceId: ns!.id },
      {
        send: (text) => {
          const message = JSON.parse(text) as { type: string; events?: Array<{ event_id: string }> };
          if (message.type === "events") seen.push(...(message.events ?? []).map((e) => e.event_id));
          return text.length;
        },
        bufferedAmount: () => 0,
        close: () => {},
      },
      { expiresAt: null },
    );
    const target = { namespaceId: ns!.id, linkId: null };
    // Node A learns of node B's viewer through the broker's presence messages: probe until a probe crosses.
    const deadline = Date.now() + 15_000;
    for (let seq = 0; seen.length === 0; seq++) {
      if (Date.now() > deadline) throw new Error("node B never saw node A's events");
      a.ingest.handle(target, { type: "events", seq, events: [tracedEvent({ http_req_path: "/probe" })] });
      await Bun.sleep(50);
    }
    const events = Array.from({ length: 20 }, () => tracedEvent());
    const ids = events.map((e) => e.event_id);
    a.ingest.handle(target, { type: "events", seq: 1000, events });
    while (!ids.every((id) => seen.includes(id))) {
      if (Date.now() > deadline) throw new Error(`node B saw ${ids.filter((id) => seen.includes(id)).length} of ${ids.length}`);
      await Bun.sleep(20);
    }
    await Promise.all(nodes.map((n) => n.otlp.flush()));
    const exported = receiver.spans().map((s) => String(s.attributes["tapscope.event_id"]));
    for (const id of ids) expect(exported.filter((x) => x === id)).toHaveLength(1);
    expect(b.otlp.statsFor(ns!.id).exported).toBe(0);
    expect(a.otlp.statsFor(ns!.id).exported).toBe(exported.length);
  } finally {
    for (const n of nodes) await n.close();
    await database.close();
  }
}, 60_000);
