import { describe, expect, test } from "bun:test";
import { ParentTracker } from "~/agent/tracer/parent-tracker.ts";

const request = (eventId: string) => ({ eventId });

describe("ParentTracker", () => {
  test("no request in flight: no parent", () => {
    expect(new ParentTracker().current(7)).toBe("");
  });

  test("the newest request in flight in the process is the parent; other processes have their own", () => {
    const parents = new ParentTracker();
    const a = request("a");
    const b = request("b");
    parents.start(7, a);
    parents.start(7, b);
    parents.start(8, request("c"));
    expect(parents.current(7)).toBe("b");
    expect(parents.current(8)).toBe("c");
    expect(parents.current(9)).toBe("");
  });

  test("finishing the newest request makes the one before it the parent again; finishing an older one leaves the newest", () => {
    const parents = new ParentTracker();
    const [a, b, c] = [request("a"), request("b"), request("c")];
    for (const r of [a, b, c]) parents.start(7, r);
    parents.finish(7, b);
    expect(parents.current(7)).toBe("c");
    parents.finish(7, c);
    expect(parents.current(7)).toBe("a");
    parents.finish(7, a);
    expect(parents.current(7)).toBe("");
  });

  test("a process with nothing in flight is forgotten; finishing an unknown request or process is harmless", () => {
    const parents = new ParentTracker();
    const a = request("a");
    parents.finish(7, a);
    parents.start(7, a);
    parents.finish(7, request("other"));
    expect(parents.current(7)).toBe("a");
    expect(parents.processes).toBe(1);
    parents.finish(7, a);
    parents.finish(7, a);
    expect(parents.processes).toBe(0);
  });
});
