import { describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { ParentTracker } from "~/agent/tracer/parent-tracker.ts";
import { newSharedParentsBuffer, SharedParentTracker } from "~/agent/tracer/shared-parents.ts";
import { waitUntil } from "../harness.ts";

type Tracker = Pick<ParentTracker, "current" | "start" | "finish">;
/**
 * The same behaviour from one tracker, and from the shared one as relay threads use it: requests started and finished
 * by two trackers over one buffer (two threads), read by a third (the main thread's outbound calls).
 */
const kinds: Array<[string, () => { first: Tracker; second: Tracker; reader: Tracker }]> = [
  [
    "ParentTracker",
    () => {
      const one = new ParentTracker();
      return { first: one, second: one, reader: one };
    },
  ],
  [
    "SharedParentTracker across threads",
    () => {
      const buffer = newSharedParentsBuffer();
      return { first: new SharedParentTracker(buffer), second: new SharedParentTracker(buffer), reader: new SharedParentTracker(buffer) };
    },
  ],
];

const request = () => ({ eventId: randomUUID() });

for (const [name, make] of kinds) {
  describe(name, () => {
    test("no request in flight: no parent", () => {
      expect(make().reader.current(7)).toBe("");
    });

    test("the newest request in flight in the process is the parent; other processes have their own", () => {
      const { first, second, reader } = make();
      const [a, b, c] = [request(), request(), request()];
      first.start(7, a);
      second.start(7, b);
      first.start(8, c);
      expect(reader.current(7)).toBe(b.eventId);
      expect(reader.current(8)).toBe(c.eventId);
      expect(reader.current(9)).toBe("");
    });

    test("finishing the newest request makes the one before it the parent again; finishing an older one leaves the newest", () => {
      const { first, second, reader } = make();
      const [a, b, c] = [request(), request(), request()];
      first.start(7, a);
      second.start(7, b);
      first.start(7, c);
      second.finish(7, b);
      expect(reader.current(7)).toBe(c.eventId);
      first.finish(7, c);
      expect(reader.current(7)).toBe(a.eventId);
      first.finish(7, a);
      expect(reader.current(7)).toBe("");
    });

    test("finishing an unknown request, or one twice, is harmless", () => {
      const { first, reader } = make();
      const a = request();
      first.finish(7, a);
      first.start(7, a);
      first.finish(7, request());
      expect(reader.current(7)).toBe(a.eventId);
      first.finish(7, a);
      first.finish(7, a);
      expect(reader.current(7)).toBe("");
    });
  });
}

describe("ParentTracker", () => {
  test("a process with nothing in flight is forgotten", () => {
    const parents = new ParentTracker();
    const a = request();
    parents.start(7, a);
    expect(parents.processes).toBe(1);
    parents.finish(7, a);
    expect(parents.processes).toBe(0);
  });
});

describe("SharedParentTracker", () => {
  test("slots are reused: far more requests than slots over time, never more in flight, all found", () => {
    const buffer = newSharedParentsBuffer();
    const thread = new SharedParentTracker(buffer);
    const reader = new SharedParentTracker(buffer);
    for (let i = 0; i < 20_000; i++) {
      const r = request();
      thread.start(i % 50, r);
      expect(reader.current(i % 50)).toBe(r.eventId);
      thread.finish(i % 50, r);
    }
    expect(thread.processes).toBe(0);
    expect(reader.current(3)).toBe("");
  });

  test("a lookup while another thread has forwarded a request it has not parsed yet waits for the parse, and finds it", async () => {
    const buffer = newSharedParentsBuffer();
    const eventId = request().eventId;
    // The thread parses only once the lookup waits: without the wait, the lookup answers "".
    const reader = new SharedParentTracker(buffer, -1, 20_000);
    const thread = new Worker(new URL("../fixtures/forwarding-thread.ts", import.meta.url).href, {
      workerData: { buffer, pid: 7, eventId },
    } as WorkerOptions);
    try {
      const said: string[] = [];
      thread.addEventListener("message", (m) => said.push(String(m.data)));
      await waitUntil(() => said.includes("forwarded"), 10_000, "the thread to forward");
      expect(reader.parent(7)).toEqual({ id: eventId, candidates: 1 });
      // Nothing in flight and no forward in progress: answered at once, not after the wait.
      const started = performance.now();
      expect(reader.parent(8)).toEqual({ id: "", candidates: 0 });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      thread.terminate();
    }
  });
});
