import { describe, expect, test } from "bun:test";
import type { NodeCalls } from "~/engines/cluster/node-calls.ts";
import { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import { AppError } from "~/lib/errors.ts";
import { noReplayRunText, type ReplayAnswer, type ReplayOrder, replayLimits } from "~/lib/protocol/replay.ts";

const order: Omit<ReplayOrder, "type" | "id"> = {
  replayOf: "e1",
  target: { direction: "inbound", address: "127.0.0.1:8080", host: "127.0.0.1:8080", isTls: false, serverName: "" },
  method: "GET",
  path: "/",
  headers: [],
  body: "",
};

function runOf(namespaceId: string, service: string) {
  const sent: ReplayOrder[] = [];
  return { sent, run: { namespaceId, service, send: (o: ReplayOrder) => sent.push(o) } };
}

describe("the runs that allow replays", () => {
  test("no run of the namespace: refused with the sentence the button shows", async () => {
    const runs = new ReplayRuns();
    const other = runOf("ns-2", "api");
    runs.register({}, other.run);
    expect(runs.has("ns-1")).toBe(false);
    const err = await runs.send("ns-1", "api", order).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).message).toBe(noReplayRunText);
    expect(other.sent).toEqual([]);
  });

  test("an order goes to a run of the original's service first, and only that socket's answer settles it", async () => {
    const runs = new ReplayRuns();
    const [keyA, keyB] = [{}, {}];
    const a = runOf("ns-1", "worker");
    const b = runOf("ns-1", "api");
    runs.register(keyA, a.run);
    runs.register(keyB, b.run);
    const answered = runs.send("ns-1", "api", order);
    expect(a.sent).toEqual([]);
    const id = b.sent[0]!.id;
    const answer: ReplayAnswer = {
      type: "replayed",
      id,
      ok: true,
      eventId: "e2",
      status: 201,
      headers: [],
      body: "",
      isBodyTruncated: false,
      durationUs: 5,
    };
    // Another socket cannot answer an order it was not sent.
    runs.answered(keyA, { ...answer, status: 500 });
    runs.answered(keyB, answer);
    expect(await answered).toEqual(answer);
  });

  test("a run that goes fails its orders at once and serves no more", async () => {
    const runs = new ReplayRuns();
    const key = {};
    runs.register(key, runOf("ns-1", "api").run);
    const pending = runs.send("ns-1", "api", order).catch((e: unknown) => (e as Error).message);
    runs.unregister(key);
    expect(await pending).toMatch(/disconnected before it answered/);
    expect(runs.has("ns-1")).toBe(false);
  });
});

/** Another node as NodeCalls reaches it: each call waits until the test answers it. */
function otherNode() {
  const asked: Array<{ nodeId: string; body: unknown; answer: (value: unknown) => void; fail: (err: Error) => void }> = [];
  const calls = {
    request: ((nodeId: string, _kind: string, body: unknown) =>
      new Promise((answer, fail) => asked.push({ nodeId, body, answer, fail }))) as unknown as NodeCalls["request"],
  };
  return { asked, calls };
}

describe("on a cluster", () => {
  test("a namespace served by another node is available here, and its order goes there with what the server read", async () => {
    const node = otherNode();
    const runs = new ReplayRuns({ calls: node.calls });
    expect(runs.has("ns-1")).toBe(false);
    runs.setRemote("node-b", ["ns-1"]);
    expect(runs.has("ns-1")).toBe(true);
    expect(runs.has("ns-2")).toBe(false);
    const answered = runs.send("ns-1", "api", order);
    expect(node.asked).toHaveLength(1);
    expect(node.asked[0]).toMatchObject({ nodeId: "node-b", body: { namespaceId: "ns-1", service: "api", ...order } });
    node.asked[0]!.answer({ ok: true, eventId: "e2", status: 201, headers: [], body: "", isBodyTruncated: false, durationUs: 5 });
    expect(await answered).toMatchObject({ type: "replayed", ok: true, eventId: "e2", status: 201 });

    // The holding node's refusal reaches the caller with its code; a node that withdraws is not asked again.
    const refused = runs.send("ns-1", "api", order).catch((e: unknown) => e as AppError);
    node.asked[1]!.answer({ ok: false, refused: "BAD_REQUEST", error: "no" });
    expect(await refused).toMatchObject({ code: "BAD_REQUEST", message: "no" });
    runs.setRemote("node-b", []);
    expect(runs.has("ns-1")).toBe(false);
    expect(((await runs.send("ns-1", "api", order).catch((e: unknown) => e)) as AppError).message).toBe(noReplayRunText);
  });

  test("a run connected here is used before another node's", async () => {
    const node = otherNode();
    const runs = new ReplayRuns({ calls: node.calls });
    const local = runOf("ns-1", "api");
    const key = {};
    runs.register(key, local.run);
    runs.setRemote("node-b", ["ns-1"]);
    const waiting = runs.send("ns-1", "api", order).catch((e: unknown) => e as AppError);
    expect(local.sent).toHaveLength(1);
    expect(node.asked).toHaveLength(0);
    // The run goes: its order fails now (not 20 s later, after this test).
    runs.unregister(key);
    expect(((await waiting) as AppError).code).toBe("UNAVAILABLE");
  });

  test("a node that goes away fails its forwarded orders at once; a failed call says which part failed", async () => {
    const node = otherNode();
    const runs = new ReplayRuns({ calls: node.calls });
    runs.setRemote("node-b", ["ns-1"]);
    const waiting = runs.send("ns-1", "api", order).catch((e: unknown) => e as AppError);
    runs.dropRemote("node-b");
    expect(await waiting).toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/node holding the run went away/) });
    runs.setRemote("node-b", ["ns-1"]);
    const timedOut = runs.send("ns-1", "api", order).catch((e: unknown) => e as AppError);
    node.asked[1]!.fail(new Error("did not answer within 25 s"));
    expect(await timedOut).toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/holding the run: did not answer/) });
  });

  test("orders forwarded at once are bounded: past the cap, refused until some are answered", async () => {
    const node = otherNode();
    const runs = new ReplayRuns({ calls: node.calls });
    runs.setRemote("node-b", ["ns-1"]);
    const inFlight = Array.from({ length: replayLimits.maxForwarded }, () => runs.send("ns-1", "api", order).catch(() => null));
    const over = await runs.send("ns-1", "api", order).catch((e: unknown) => e as AppError);
    expect(over).toMatchObject({ code: "RATE_LIMITED" });
    expect(node.asked).toHaveLength(replayLimits.maxForwarded);
    node.asked[0]!.answer({ ok: false, error: "refused by the target" });
    await inFlight[0];
    const next = runs.send("ns-1", "api", order).catch(() => null);
    expect(node.asked).toHaveLength(replayLimits.maxForwarded + 1);
    runs.dropRemote("node-b");
    await Promise.all([...inFlight, next]);
  });
});
