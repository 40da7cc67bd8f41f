import { describe, expect, test } from "bun:test";
import { BoundedQueue } from "~/agent/bounded-queue.ts";

function drain<T>(queue: BoundedQueue<T>): T[] {
  const out: T[] = [];
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) out.push(item);
  return out;
}

describe("BoundedQueue", () => {
  test("first in, first out, across growth and wrap-around", () => {
    const queue = new BoundedQueue<number>(1000);
    let next = 0;
    let expected = 0;
    // Interleave pushes and shifts so the ring wraps while it grows.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 13; i++) expect(queue.push(next++)).toBe(true);
      for (let i = 0; i < 7; i++) expect(queue.shift()).toBe(expected++);
    }
    expect(queue.length).toBe(next - expected);
    expect(drain(queue)).toEqual(Array.from({ length: next - expected }, (_, i) => expected + i));
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
    expect(queue.dropped).toBe(0);
  });

  test("holds at most its capacity; what does not fit is refused and counted, the queued items untouched", () => {
    const queue = new BoundedQueue<string>(3);
    expect(["a", "b", "c", "d", "e"].map((s) => queue.push(s))).toEqual([true, true, true, false, false]);
    expect(queue.length).toBe(3);
    expect(queue.dropped).toBe(2);
    expect(queue.shift()).toBe("a");
    expect(queue.push("f")).toBe(true);
    expect(queue.push("g")).toBe(false);
    expect(queue.dropped).toBe(3);
    expect(drain(queue)).toEqual(["b", "c", "f"]);
  });

  test("a capacity that is not a power of two is reached exactly", () => {
    const queue = new BoundedQueue<number>(37);
    for (let i = 0; i < 100; i++) queue.push(i);
    expect(queue.length).toBe(37);
    expect(queue.dropped).toBe(63);
    expect(drain(queue)).toEqual(Array.from({ length: 37 }, (_, i) => i));
  });

  test("bounded by the sum of sizes too: an item over the remaining room is refused, a smaller one may still fit", () => {
    const queue = new BoundedQueue<string>(100, 10);
    expect(queue.push("six", 6)).toBe(true);
    expect(queue.push("five", 5)).toBe(false);
    expect(queue.push("four", 4)).toBe(true);
    expect(queue.bytes).toBe(10);
    expect(queue.dropped).toBe(1);
    expect(queue.peekSize()).toBe(6);
    expect(queue.shift()).toBe("six");
    expect(queue.bytes).toBe(4);
    expect(queue.peekSize()).toBe(4);
    expect(queue.push("five", 5)).toBe(true);
    expect(queue.bytes).toBe(9);
  });

  test("clear empties it and says how many were held, without counting them as dropped", () => {
    const queue = new BoundedQueue<number>(10, 100);
    for (let i = 0; i < 4; i++) queue.push(i, 10);
    expect(queue.clear()).toBe(4);
    expect(queue.length).toBe(0);
    expect(queue.bytes).toBe(0);
    expect(queue.dropped).toBe(0);
    expect(queue.peekSize()).toBe(0);
    queue.push(9, 1);
    expect(drain(queue)).toEqual([9]);
  });

  test("a zero capacity refuses everything", () => {
    const queue = new BoundedQueue<number>(0);
    expect(queue.push(1)).toBe(false);
    expect(queue.length).toBe(0);
    expect(queue.dropped).toBe(1);
  });
});
