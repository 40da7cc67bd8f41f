import { describe, expect, test } from "bun:test";
import { BatchQueue } from "~/agent/publisher/batch-queue.ts";
import { estimateBytes } from "~/agent/publisher/estimate-bytes.ts";
import { type CapturedEvent, eventFieldTable } from "~/lib/protocol/event.ts";
import { sampleEvent } from "../../support/publish-server.ts";

type Item = { id: number; size: number };
const item = (id: number, size = 10): Item => ({ id, size });
const ids = (items: Item[]) => items.map((i) => i.id);

describe("BatchQueue", () => {
  test("batches come out in order, up to the count asked for", () => {
    const queue = new BatchQueue<Item>(100, 1_000_000, (i) => i.size);
    for (let i = 0; i < 7; i++) queue.offer(item(i));
    expect(ids(queue.take(3, 1_000_000))).toEqual([0, 1, 2]);
    expect(ids(queue.take(3, 1_000_000))).toEqual([3, 4, 5]);
    expect(ids(queue.take(3, 1_000_000))).toEqual([6]);
    expect(queue.take(3, 1_000_000)).toEqual([]);
  });

  test("a batch stops before the item that would take it over the byte budget; one item over it still goes alone", () => {
    const queue = new BatchQueue<Item>(100, 1_000_000, (i) => i.size);
    for (const [id, size] of [
      [0, 40],
      [1, 40],
      [2, 40],
      [3, 500],
      [4, 10],
    ] as const)
      queue.offer(item(id, size));
    expect(ids(queue.take(10, 100))).toEqual([0, 1]);
    expect(ids(queue.take(10, 100))).toEqual([2]);
    expect(ids(queue.take(10, 100))).toEqual([3]);
    expect(ids(queue.take(10, 100))).toEqual([4]);
    expect(queue.bytes).toBe(0);
  });

  test("bounded by count and by estimated bytes; what does not fit is dropped and counted", () => {
    const byCount = new BatchQueue<Item>(2, 1_000_000, (i) => i.size);
    expect([1, 2, 3].map((i) => byCount.offer(item(i)))).toEqual([true, true, false]);
    expect(byCount.dropped).toBe(1);

    const byBytes = new BatchQueue<Item>(100, 25, (i) => i.size);
    expect([1, 2, 3].map((i) => byBytes.offer(item(i)))).toEqual([true, true, false]);
    expect(byBytes.bytes).toBe(20);
    expect(byBytes.dropped).toBe(1);
    byBytes.take(1, 100);
    expect(byBytes.offer(item(4))).toBe(true);
  });

  test("each item is sized once, when offered", () => {
    let calls = 0;
    const queue = new BatchQueue<Item>(10, 1000, (i) => {
      calls++;
      return i.size;
    });
    queue.offer(item(1));
    queue.offer(item(2));
    queue.take(10, 5);
    queue.take(10, 5);
    expect(calls).toBe(2);
  });

  test("clear says how many were waiting", () => {
    const queue = new BatchQueue<Item>(10, 1000, (i) => i.size);
    queue.offer(item(1));
    queue.offer(item(2));
    expect(queue.clear()).toBe(2);
    expect(queue.length).toBe(0);
    expect(queue.dropped).toBe(0);
  });
});

describe("estimateBytes", () => {
  test("counts body bytes, and never throws on values of the wrong type", () => {
    const empty: CapturedEvent = { ...sampleEvent(), http_resp_body: "" };
    const withBody: CapturedEvent = { ...empty, http_resp_body: new Uint8Array(1000) };
    expect(estimateBytes(withBody) - estimateBytes(empty)).toBe(1000);
    const odd = { ...empty, http_req_headers: "nope", tags: null, http_req_path: 42 } as unknown as CapturedEvent;
    expect(estimateBytes(odd)).toBeGreaterThan(0);
  });

  test("counts every text field of the event field table, so a batch of long values stays under the server's bound", () => {
    const event = sampleEvent();
    for (const f of eventFieldTable) {
      if (f.type !== "text") continue;
      const long = { ...event, [f.name]: "x".repeat(f.max) };
      expect(estimateBytes(long) - estimateBytes(event)).toBeGreaterThanOrEqual(
        f.max - String(event[f.name as keyof CapturedEvent]).length,
      );
    }
  });
});
