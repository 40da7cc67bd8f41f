import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectRedisBroker } from "~/engines/cluster/broker.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { noReplayRunText } from "~/lib/protocol/replay.ts";
import { createRuntime, type Runtime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { startTestApp, type TestApp } from "../support/app.ts";
import { type Service, startRedis } from "../support/cluster.ts";
import { startTracedProgram, type TracedProgram } from "../support/traced-program.ts";

// Resend on a cluster: a real program under `tapscope run` publishes to node A, while the admin's calls land on node B
// (as a load balancer may send them). Two nodes on one database, one event store and a real Redis.
const root = join(import.meta.dir, "../..");
let redis: Service & { brokerUrl: string };
let store: EventStore;
let t: TestApp;
const dataDir = mkdtempSync(join(tmpdir(), "tapscope-resend-cluster-"));
type Node = { runtime: Runtime; base: string; stop: () => Promise<void> };
let a: Node;
let b: Node;
let admin: Awaited<ReturnType<TestApp["onboardedUser"]>>;
let token = "";

async function startNode(): Promise<Node> {
  const config = { ...t.config };
  const runtime = createRuntime({ config, db: t.db, now: t.clock.now, store, broker: await connectRedisBroker(redis.brokerUrl) });
  await runtime.start();
  const server = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
  // The publish socket JoinPublisher hands out must reach this node.
  config.publicUrl = `http://127.0.0.1:${server.server!.port}`;
  return {
    runtime,
    base: config.publicUrl,
    stop: async () => {
      await server.stop(true);
      await runtime.close();
    },
  };
}

beforeAll(async () => {
  redis = await startRedis();
  store = await openDuckDbStore({ path: join(dataDir, "events.duckdb") });
  t = await startTestApp({ backend: "pglite" });
  [a, b] = [await startNode(), await startNode()];
  admin = await t.onboardedUser();
  token = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.token;
}, 60_000);
afterAll(async () => {
  for (const node of [a, b]) await node?.stop();
  await t?.close();
  await store?.close();
  redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** An API call as the admin's browser makes it, landing on `node`. */
async function call(node: Node, name: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${node.base}/api/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: node.base, cookie: admin.cookie },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

type Run = TracedProgram & { eventsFile: string };

/** The program under `tapscope run`, publishing to node A. */
async function startRun(allowReplay: boolean): Promise<Run> {
  const eventsFile = join(dataDir, `run-${crypto.randomUUID()}.jsonl`);
  const program = await startTracedProgram({
    runArgs: [...(allowReplay ? ["--allow-replay"] : []), "--events-file", eventsFile],
    command: ["python3", join(root, "tests/e2e/resend-server.py")],
    env: { TAPSCOPE_ENDPOINT: a.base, TAPSCOPE_TOKEN: token },
    ready: /sending requests to/,
  });
  return { ...program, eventsFile };
}

/** The run's own record of an event (its --events-file), once one matches. */
async function eventOf(run: Run, match: (e: TracedEvent) => boolean): Promise<TracedEvent> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    let lines: string[] = [];
    try {
      lines = readFileSync(run.eventsFile, "utf8").split("\n").filter(Boolean);
    } catch {}
    const found = lines.map((l) => JSON.parse(l) as TracedEvent).find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such event in ${lines.length}; the run said: ${run.output()}`);
    await Bun.sleep(100);
  }
}

/** Polls `check` until it holds (the nodes learn of each other's runs at their next presence beat, about a second). */
async function eventually<T>(what: string, get: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await get();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await Bun.sleep(100);
  }
}

const availabilityAt = (node: Node) => async () => (await call(node, "GetReplayAvailability", { namespaceId: admin.namespaceId })).body;

test("without --allow-replay on node A's run, node B says nothing can resend, and refuses", async () => {
  const run = await startRun(false);
  try {
    await fetch(`http://127.0.0.1:${run.port}/echo?plain=1`, { method: "POST", body: "first" });
    const original = await eventOf(run, (e) => e.http_req_path === "/echo?plain=1");
    // Node B has heard of A's publisher (its presence carries it), and still no replay-allowing run.
    await eventually(
      "node B never heard of node A's publisher",
      async () => b.runtime.hub.stats({ kind: "namespace", namespaceId: admin.namespaceId }).numPublishers,
      (n) => n > 0,
    );
    expect(await availabilityAt(b)()).toEqual({ canResend: false, reason: noReplayRunText });
    const refused = await call(b, "ResendRequest", {
      namespaceId: admin.namespaceId,
      eventId: original.event_id,
      method: "POST",
      path: "/echo?plain=2",
      headers: [],
      body: "",
    });
    expect(refused).toEqual({ status: 409, body: { error: noReplayRunText } });
  } finally {
    await run.stop();
  }
}, 60_000);

test("a Resend landing on node B reaches the program through node A's run; the replay is stored marked", async () => {
  const run = await startRun(true);
  try {
    await fetch(`http://127.0.0.1:${run.port}/echo?n=1`, { method: "POST", body: "first" });
    const original = await eventOf(run, (e) => e.http_req_path === "/echo?n=1");
    await eventually("node B never said it can resend", availabilityAt(b), (v) => v.canResend === true);
    expect(b.runtime.replays.localNamespaces()).toEqual([]);
    expect(a.runtime.replays.localNamespaces()).toEqual([admin.namespaceId]);

    const edit = {
      namespaceId: admin.namespaceId,
      eventId: original.event_id,
      method: "PUT",
      path: "/echo?n=2",
      headers: [["x-edit", "edited on B"]],
      body: Buffer.from("second body").toString("base64"),
    };
    // The store writes the original in a batch: a 404 before it has is asked again.
    const answer = await eventually(
      "the resend",
      () => call(b, "ResendRequest", edit),
      (r) => r.status !== 404,
    );
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe(200);
    expect(answer.body.sentTo).toBe(`the program at ${original.http_server_addr}`);
    const echoed = JSON.parse(Buffer.from(answer.body.body as string, "base64").toString());
    expect(echoed).toEqual({ method: "PUT", path: "/echo?n=2", x_edit: "edited on B", body: "second body" });

    const replayId = answer.body.eventId as string;
    const [stored] = await eventually(
      "the replay never reached the store",
      () => store.getEvents(admin.namespaceId, [replayId]),
      (events) => events.length === 1,
    );
    expect(stored).toMatchObject({ replay_of: original.event_id, http_req_method: "PUT", http_req_path: "/echo?n=2" });

    // What reaches node A is checked there again: an order for a namespace none of its runs serves is refused, and an
    // edit the API would refuse is refused, whatever the asking node says.
    const other = await t.onboardedUser();
    const order = {
      namespaceId: admin.namespaceId,
      service: original.service,
      replayOf: original.event_id,
      target: {
        direction: "inbound" as const,
        address: original.http_server_addr,
        host: original.http_req_host,
        isTls: false,
        serverName: "",
      },
      method: "GET",
      path: "/echo?n=3",
      headers: [] as Array<[string, string]>,
      body: "",
    };
    const calls = b.runtime.cluster!.calls;
    expect(await calls.request(a.runtime.cluster!.nodeId, "replay", { ...order, namespaceId: other.namespaceId })).toEqual({
      ok: false,
      refused: "CONFLICT",
      error: noReplayRunText,
    });
    expect(await calls.request(a.runtime.cluster!.nodeId, "replay", { ...order, headers: [["host", "evil.example"]] })).toMatchObject({
      ok: false,
      refused: "BAD_REQUEST",
    });
    const lines = readFileSync(run.eventsFile, "utf8");
    expect(lines).not.toContain("/echo?n=3");

    // The run goes: node B says so once A's presence tells it (at once, not at the next beat).
    await run.stop();
    await eventually("node B still offers Resend", availabilityAt(b), (v) => v.canResend === false);
  } finally {
    await run.stop();
  }
}, 90_000);
