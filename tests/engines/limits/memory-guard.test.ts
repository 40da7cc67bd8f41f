import { expect, test } from "bun:test";
import { MemoryGuard } from "~/engines/limits/memory-guard.ts";
import { memoryShares } from "~/lib/server/env.ts";

test("the guard collects only above its share of the budget, and at most once per interval", () => {
  let rss = 500;
  let now = 0;
  let collected = 0;
  const guard = new MemoryGuard(
    { budgetBytes: 1000, collectAbove: 0.7, minIntervalMs: 2000 },
    { rss: () => rss, collect: () => collected++, now: () => now },
  );
  expect(guard.check()).toBe(false);
  rss = 750;
  expect(guard.check()).toBe(true);
  now = 1000;
  expect(guard.check()).toBe(false);
  now = 2500;
  expect(guard.check()).toBe(true);
  rss = 600;
  now = 10_000;
  expect(guard.check()).toBe(false);
  expect(collected).toBe(2);
  expect(guard.collections).toBe(2);
});

test("the memory shares leave a quarter of MEMORY_LIMIT to the runtime itself", () => {
  const limit = 1024 ** 3;
  const s = memoryShares(limit);
  const held =
    s.duckdbBytes + s.storeBufferChars * 2 + s.liveHistoryBytes + s.liveSendBytes + s.harExportBytes + s.socketBytes + s.otlpQueueBytes;
  expect(held).toBe(limit * 0.75);
});
