import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Redis from "ioredis";
import type { SubscriberTransport } from "~/engines/live/subscriber.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import type { Runtime } from "~/runtime.ts";
import { type Service, startNodeRuntime, startRedis } from "../support/cluster.ts";
import { sampleEvent } from "../support/publish-server.ts";

// One node made by createRuntime on a real Redis, and a raw Redis client playing another node that sends what no node of
// ours would: what arrives from the broker is checked where it arrives, and what fails is dropped and counted, never
// shown to a viewer, never thrown out of the broker's handler.
let redis: Service & { brokerUrl: string };
let node: { runtime: Runtime; stop: () => Promise<void> };
let other: Redis;
let cluster: NonNullable<Runtime["cluster"]>;

beforeAll(async () => {
  redis = await startRedis();
  node = await startNodeRuntime(redis.brokerUrl, { INGEST_RATE_LIMIT: "1" });
  cluster = node.runtime.cluster!;
  other = new Redis(redis.brokerUrl);
}, 60_000);

afterAll(async () => {
  other?.disconnect();
  await node?.stop();
  redis?.stop();
});

/** A viewer on the node's hub that keeps every message it is sent. */
function viewer(namespaceId: string) {
  const messages: LiveServerMessage[] = [];
  const transport: SubscriberTransport = {
    send: (data) => {
      messages.push(JSON.parse(data));
      return data.length;
    },
    bufferedAmount: () => 0,
    close: () => {},
  };
  node.runtime.hub.subscribe({ kind: "namespace", namespaceId }, transport, { expiresAt: null, address: "198.51.100.1" });
  return {
    messages,
    eventIds: () =>
      messages.flatMap((m) =>
        m.type === "events" || m.type === "history" ? m.events.map((e) => (e as Partial<TracedEvent>).event_id) : [],
      ),
    stats: () => messages.filter((m): m is Extract<LiveServerMessage, { type: "stats" }> => m.type === "stats"),
  };
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const publish = (channel: string, message: unknown) =>
  other.publish(channel, typeof message === "string" ? message : JSON.stringify(message));

describe("broker messages are checked where they arrive", () => {
  test("live batches: text that is not JSON, a wrong shape and events the publish validator refuses are dropped and counted; a good batch still arrives", async () => {
    const namespaceId = crypto.randomUUID();
    const watching = viewer(namespaceId);
    const good = sampleEvent();
    await publish("tapscope:live", "{ not json");
    await publish("tapscope:live", { n: "other", ns: namespaceId, l: null, e: "not a list" });
    await publish("tapscope:live", { n: "other", ns: namespaceId, l: null, e: [{}, { ...sampleEvent(), event_id: "not-a-uuid" }] });
    await publish("tapscope:live", { n: "other", ns: namespaceId, l: null, e: [good] });
    await until(() => watching.eventIds().includes(good.event_id), "the good batch");
    node.runtime.hub.flushAll();
    expect(watching.eventIds()).toEqual([good.event_id]);
    expect(cluster.refused.total("live")).toBe(2);
    expect(cluster.refused.total("live events")).toBe(2);
  });

  test("live pending requests: another node's are checked and shown to the channel's viewers; bad ones are dropped and counted", async () => {
    const namespaceId = crypto.randomUUID();
    const watching = viewer(namespaceId);
    const good = { event_id: crypto.randomUUID(), time: Date.now() * 1000, http_req_method: "GET", http_req_path: "/hang" };
    await publish("tapscope:live", { n: "other", ns: namespaceId, l: null, e: [], p: [{ ...good, event_id: "nope" }, good] });
    await until(() => watching.messages.some((m) => m.type === "pending"), "the pending request");
    const shown = watching.messages.flatMap((m) => (m.type === "pending" ? m.requests : []));
    expect(shown.map((r) => [r.event_id, r.http_req_path])).toEqual([[good.event_id, "/hang"]]);
    expect(cluster.refused.total("live pending requests")).toBe(1);
    expect(watching.eventIds()).toEqual([]);
  });

  test("pending requests accepted here go to the broker for a channel another node watches, as events do", async () => {
    const namespaceId = crypto.randomUUID();
    const listener = new Redis(redis.brokerUrl);
    const heard: string[] = [];
    await listener.subscribe("tapscope:live");
    listener.on("message", (_channel, text: string) => heard.push(text));
    await publish("tapscope:presence", { n: "other", c: [], o: [], w: [`ns:${namespaceId}`] });
    const request = { event_id: crypto.randomUUID(), time: Date.now() * 1000, http_req_method: "GET", http_req_path: "/slow" };
    await until(() => {
      node.runtime.ingest.handle({ namespaceId, linkId: null }, { type: "pending", seq: 1, requests: [request] });
      return heard.some((t) => t.includes(request.event_id));
    }, "the pending request on the broker");
    const message = JSON.parse(heard.find((t) => t.includes(request.event_id))!);
    expect(message).toMatchObject({ ns: namespaceId, e: [], p: [{ event_id: request.event_id, http_req_path: "/slow" }] });
    listener.disconnect();
  });

  test("presence: counts that are not numbers are refused, so a viewer's publisher count stays a number", async () => {
    const namespaceId = crypto.randomUUID();
    const watching = viewer(namespaceId);
    await publish("tapscope:presence", { n: "other", c: [[`ns:${namespaceId}`, "7"]], o: [], w: [] });
    await publish("tapscope:presence", { n: "other", c: [[`ns:${namespaceId}`, 2]], o: [["org-x", -1]], w: [] });
    await publish("tapscope:presence", { n: "other", c: [[`ns:${namespaceId}`, 2]], o: [], w: [] });
    await until(() => node.runtime.hub.stats({ kind: "namespace", namespaceId }).numPublishers === 2, "the good presence");
    expect(watching.stats().map((s) => s.numPublishers)).toEqual([0, 2]);
    expect(cluster.refused.total("presence")).toBe(2);
  });

  test("limits: an unknown limiter or client-limit kind (even one named like Object's own properties) is refused; good grants are spent", async () => {
    const target = { namespaceId: crypto.randomUUID(), linkId: null };
    await publish("tapscope:limits", { n: "other", l: {}, c: { constructor: { k: [], g: 1 } } });
    await publish("tapscope:limits", { n: "other", l: { "ns; DROP": [["x", 1]] } });
    await publish("tapscope:limits", { n: "other", l: { ns: [[`ns:${target.namespaceId}`, 1e12]] } });
    // INGEST_RATE_LIMIT=1: ten at once. Another node granted all ten.
    await publish("tapscope:limits", { n: "other", l: { ns: [[`ns:${target.namespaceId}`, 10]] } });
    // Delivered after the limits (one connection's messages arrive in order): the node went on answering the broker.
    const namespaceId = crypto.randomUUID();
    const watching = viewer(namespaceId);
    const good = sampleEvent();
    await publish("tapscope:live", { n: "other", ns: namespaceId, l: null, e: [good] });
    await until(() => watching.eventIds().includes(good.event_id), "a batch after the limits");
    expect(cluster.refused.total("limits")).toBe(3);
    const events = JSON.stringify({ type: "events", seq: 1, events: Array.from({ length: 10 }, () => sampleEvent()) });
    const reply = node.runtime.ingest.handle(target, events);
    // Alone this node would take all ten; what refilled since the other node's grant (1 a second) may pass.
    expect(reply.type === "ack" && reply.accepted).toBeLessThan(10);
    expect(reply.type === "ack" && reply.rateLimited).toBeGreaterThan(0);
  });

  test("calls between nodes: a malformed body is answered with an error; a history answer's bad events are dropped, its good ones shown", async () => {
    const answers: Array<{ id: string; error?: string; answer?: string }> = [];
    const good = sampleEvent();
    const listener = new Redis(redis.brokerUrl);
    await listener.subscribe("tapscope:node:other");
    listener.on("message", (_channel: string, text: string) => {
      const message = JSON.parse(text);
      if (message.body === undefined) {
        answers.push(message);
        return;
      }
      // Asked for a channel's history by the node: answered with one event no node would send and one good one.
      if (message.kind === "history") {
        void publish(`tapscope:node:${message.from}`, {
          id: message.id,
          from: "other",
          kind: "history",
          answer: JSON.stringify([{ event_id: 5 }, good]),
        });
      }
    });
    try {
      await publish("tapscope:presence", { n: "other", c: [], o: [], w: [] });
      await until(() => cluster.otherNodes().includes("other"), "the other node heard from");

      await publish(`tapscope:node:${cluster.nodeId}`, { id: "q1", from: "other", kind: "history", body: JSON.stringify({ key: 5 }) });
      await publish(`tapscope:node:${cluster.nodeId}`, { id: "q2", from: "other", kind: "no-such-call", body: "{}" });
      await until(() => answers.length === 2, "two answers");
      const byId = new Map(answers.map((a) => [a.id, a]));
      expect(byId.get("q1")?.error).toContain("malformed history call");
      expect(byId.get("q1")?.answer).toBeUndefined();
      expect(byId.get("q2")?.error).toBe("no handler for no-such-call");
      expect(cluster.refused.total("call:history")).toBe(1);

      // A first viewer of a channel: the node asks the other for its history.
      const namespaceId = crypto.randomUUID();
      const watching = viewer(namespaceId);
      await until(() => watching.eventIds().includes(good.event_id), "the other node's history");
      node.runtime.hub.flushAll();
      expect(watching.eventIds()).toEqual([good.event_id]);
      expect(cluster.refused.total("history events")).toBe(1);
    } finally {
      listener.disconnect();
    }
  });
});
