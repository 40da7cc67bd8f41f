import { describe, expect, test } from "bun:test";
import {
  type BrokerMessage,
  type BrokerMessageKind,
  brokerMessages,
  decodeBrokerMessage,
  decodeNodeAnswer,
  decodeNodeBody,
  encodeBrokerMessage,
  encodeNodeAnswer,
  encodeNodeBody,
  maxBrokerMessageChars,
  type NodeCallAnswer,
  type NodeCallBody,
  type NodeCallKind,
  nodeCalls,
} from "~/lib/protocol/cluster.ts";
import { sampleEvent } from "../../support/publish-server.ts";

/** What a node sends on each broker channel, as ClusterNode and NodeCalls build it. */
const sent: { [K in BrokerMessageKind]: BrokerMessage<K> } = {
  live: { n: "node-a", ns: crypto.randomUUID(), l: null, e: [sampleEvent()] },
  presence: {
    n: "node-a",
    c: [
      ["ns:1", 2],
      ["link:abc", 1],
    ],
    o: [["org-1", 3]],
    w: ["link:abc"],
    r: ["ns-1"],
  },
  limits: { n: "node-a", l: { ns: [["ns:1", 40]], "org:50": [["org-1", 40]] }, c: { emailLogin: { k: [["203.0.113.7", 1]], g: 1 } } },
  node: { id: "node-a:1", from: "node-a", kind: "history", body: '{"key":"ns:1","node":"node-a"}' },
  routes: { n: "node-a", f: [["ns:1", "/users"]], v: [["ns:1", "/shops", [1, 4294967295]]], p: [["ns-1", ["/users/{login}"]]] },
};

const calls: { [K in NodeCallKind]: { body: NodeCallBody<K>; answer: NodeCallAnswer<K> } } = {
  history: { body: { key: "ns:1", node: "node-a" }, answer: [sampleEvent()] },
  tunnels: {
    body: { principalKey: "user:1", createdAfterMs: 0 },
    answer: [{ tunnelId: "t1", principalKey: "user:1", namespaceId: "ns-1", role: "SELECT", createTimeMs: 1, expiresAtMs: null }],
  },
  worker: {
    body: { orgId: "org-1", request: { queryId: "q1", tags: {}, compression: "none", want: { kind: "event", eventId: "e1" } } },
    answer: "VFMBAg==",
  },
  replay: {
    body: {
      namespaceId: "ns-1",
      service: "shop",
      replayOf: crypto.randomUUID(),
      target: { direction: "inbound", address: "127.0.0.1:8080", host: "localhost:8080", isTls: false, serverName: "localhost" },
      method: "POST",
      path: "/echo?n=2",
      headers: [["x-edit", "1"]],
      body: "aGk=",
    },
    answer: {
      ok: true,
      eventId: crypto.randomUUID(),
      status: 200,
      headers: [["content-type", "text/plain"]],
      body: "b2s=",
      isBodyTruncated: false,
      durationUs: 1200,
    },
  },
};

describe("the cluster's protocol (lib/protocol/cluster.ts)", () => {
  test("every broker channel and node call has a schema, and what a node sends decodes to itself", () => {
    expect(Object.keys(sent).sort()).toEqual(Object.keys(brokerMessages).sort());
    expect(Object.keys(calls).sort()).toEqual(Object.keys(nodeCalls).sort());
    for (const kind of Object.keys(sent) as BrokerMessageKind[]) {
      expect(decodeBrokerMessage(kind, encodeBrokerMessage(kind, sent[kind] as never)), kind).toEqual({ ok: true, value: sent[kind] });
    }
    for (const kind of Object.keys(calls) as NodeCallKind[]) {
      const { body, answer } = calls[kind];
      expect(decodeNodeBody(kind, encodeNodeBody(kind, body as never)), kind).toEqual({ ok: true, value: body });
      expect(decodeNodeAnswer(kind, encodeNodeAnswer(kind, answer as never)), kind).toEqual({ ok: true, value: answer });
    }
  });

  test("what no node sends is refused with where it went wrong", () => {
    expect(decodeBrokerMessage("presence", "{")).toEqual({ ok: false, error: "not JSON" });
    const refused = (kind: BrokerMessageKind, value: unknown) => decodeBrokerMessage(kind, JSON.stringify(value));
    expect(refused("presence", { ...sent.presence, c: [["ns:1", "2"]] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("/c/0/1"),
    });
    expect(refused("presence", { ...sent.presence, w: ["ns-1"] })).toMatchObject({ ok: false, error: expect.stringContaining("/w/0") });
    expect(refused("limits", { n: "node-a", l: JSON.parse('{"__proto__": [["x", 1]]}') })).toMatchObject({ ok: false });
    expect(refused("limits", { n: "node-a", l: { "org:x": [] } })).toMatchObject({ ok: false, error: expect.stringContaining("/l/org:x") });
    expect(refused("limits", { n: "node-a", l: { ns: [["k", -1]] } })).toMatchObject({ ok: false });
    expect(refused("live", { ...sent.live, ns: 5 })).toMatchObject({ ok: false, error: expect.stringContaining("/ns") });
    expect(refused("routes", { ...sent.routes, v: [["ns:1", "/x", [-1]]] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("/v/0/2/0"),
    });
    expect(refused("routes", { ...sent.routes, f: [["ns:1", "x".repeat(5000)]] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("/f/0/1"),
    });
    expect(refused("node", { id: "", from: "node-a", kind: "history" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("/id"),
    });
    expect(decodeNodeBody("history", JSON.stringify({ key: 5, node: "a" }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("/key"),
    });
    expect(decodeNodeAnswer("tunnels", JSON.stringify([{ tunnelId: "t" }]))).toMatchObject({ ok: false });
    expect(
      decodeNodeBody("worker", JSON.stringify({ orgId: "o", request: { queryId: "q", tags: {}, compression: "zstd", want: {} } })),
    ).toMatchObject({
      ok: false,
    });
  });

  test("a forwarded Resend is bounded as the API call is: a larger body, or a target that is not an address's, is refused", () => {
    const body = calls.replay.body;
    const tooLarge = "A".repeat(Math.ceil((128 * 1024) / 3) * 4 + 4);
    expect(decodeNodeBody("replay", JSON.stringify({ ...body, body: tooLarge }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("/body"),
    });
    expect(decodeNodeBody("replay", JSON.stringify({ ...body, target: { ...body.target, direction: "sideways" } }))).toMatchObject({
      ok: false,
    });
    expect(decodeNodeBody("replay", JSON.stringify({ ...body, headers: Array.from({ length: 101 }, () => ["x", "1"]) }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("/headers"),
    });
    expect(decodeNodeAnswer("replay", JSON.stringify({ ok: false, refused: "INTERNAL", error: "x" }))).toMatchObject({ ok: false });
  });

  test("a message longer than the bound is not parsed", () => {
    const long = `{"n":"${"x".repeat(maxBrokerMessageChars)}"}`;
    expect(decodeBrokerMessage("presence", long)).toEqual({ ok: false, error: `longer than ${maxBrokerMessageChars} characters` });
  });
});
