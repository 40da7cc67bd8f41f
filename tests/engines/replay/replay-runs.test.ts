import { describe, expect, test } from "bun:test";
import { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import { AppError } from "~/lib/errors.ts";
import { noReplayRunText, type ReplayAnswer, type ReplayOrder } from "~/lib/protocol/replay.ts";

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
