import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { StoreSink } from "~/engines/store/store-sink.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { generateEvents } from "../../store/generate.ts";

const endMs = Date.UTC(2026, 0, 10, 12);
const all = { clauses: [], global: { lowerMs: endMs - 3_600_000, upperMs: endMs } };
const events = (n: number, seed = 1) =>
  generateEvents({ count: n, startMicros: (endMs - 3_600_000) * 1000, endMicros: endMs * 1000, seed });

/** The real store, with the size of each insert recorded (the store takes its insertBatchSize most cheaply). */
function recordingInserts(store: EventStore): { recording: EventStore; written: number[] } {
  const written: number[] = [];
  const recording: EventStore = Object.create(store);
  recording.insertRows = (namespaceId, batch) => {
    written.push(batch.reduce((sum, rows) => sum + rows.count, 0));
    return store.insertRows(namespaceId, batch);
  };
  return { recording, written };
}

describe("store sink", () => {
  let store: EventStore;
  beforeEach(async () => {
    store = await openDuckDbStore({ path: ":memory:" });
  });
  afterEach(async () => {
    await store.close();
  });

  test("batches by count without waiting for the timer, and by time", async () => {
    const ns = randomUUID();
    const sink = new StoreSink({ store, rateLimit: 0, batchSize: 100, flushIntervalMs: 50 });
    const sinks = new EventSinks();
    sinks.add(sink);
    sinks.accept({ namespaceId: ns, linkId: null }, events(250));
    // 2 full batches are written straight away; the remaining 50 by the timer.
    for (let waited = 0; sink.statsFor(ns).written < 250 && waited < 5000; waited += 10) await Bun.sleep(10);
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(250);
    expect(sink.statsFor(ns)).toEqual({
      accepted: 250,
      written: 250,
      dropped: { rate_limited: 0, overloaded: 0, store_error: 0 },
    });
    await sink.close();
  });

  test("while events keep coming, only full batches are written; a partial one waits for the interval", async () => {
    const ns = randomUUID();
    const { recording, written } = recordingInserts(store);
    const sink = new StoreSink({ store: recording, rateLimit: 0, batchSize: 100, flushIntervalMs: 300 });
    sink.accept({ namespaceId: ns, linkId: null }, events(130));
    await Bun.sleep(50);
    const secondAt = performance.now();
    sink.accept({ namespaceId: ns, linkId: null }, events(100, 5));
    for (let waited = 0; sink.statsFor(ns).written < 200 && waited < 5000; waited += 10) await Bun.sleep(10);
    // Two full batches at once; the 30 left are not written as an odd-sized insert while they are fresh (a busy
    // machine may take past the interval to get here: then they may have gone, after the two).
    if (performance.now() - secondAt < 300) expect(written).toEqual([100, 100]);
    expect(written.slice(0, 2)).toEqual([100, 100]);
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBeGreaterThanOrEqual(200);
    // Once the oldest of them has waited the interval, the partial batch goes too.
    for (let waited = 0; sink.statsFor(ns).written < 230 && waited < 5000; waited += 20) await Bun.sleep(20);
    expect(performance.now() - secondAt).toBeGreaterThanOrEqual(300);
    expect(written).toEqual([100, 100, 30]);
    expect(sink.statsFor(ns).written).toBe(230);
    // flush() (and close) write whatever is pending at once.
    sink.accept({ namespaceId: ns, linkId: null }, events(7, 6));
    await sink.flush();
    expect(written).toEqual([100, 100, 30, 7]);
    await sink.close();
  });

  test("large events make smaller batches, so one insert never carries more than maxBatchChars", async () => {
    const ns = randomUUID();
    const { recording, written } = recordingInserts(store);
    const sink = new StoreSink({ store: recording, rateLimit: 0, batchSize: 100, maxBatchChars: 1_000_000 });
    const big = events(30, 7).map((e) => ({ ...e, http_resp_body: "QUJD".repeat(50_000) })); // 200,000 characters each
    sink.accept({ namespaceId: ns, linkId: null }, big);
    await sink.close();
    expect(written.reduce((a, b) => a + b, 0)).toBe(30);
    expect(Math.max(...written)).toBe(4); // 4 x 200,000 and change fit in 1,000,000; a fifth does not
    const stored = await store.queryRows(ns, { filter: all, columns: ["event_id"] });
    expect(stored.actualNumberOfRows).toBe(30);
  });

  test("accept never waits for the store", async () => {
    const sink = new StoreSink({ store, rateLimit: 0 });
    const ns = randomUUID();
    sink.accept({ namespaceId: ns, linkId: null }, events(20_000));
    // Returned before any insert finished: the events are held, none written yet.
    expect(sink.statsFor(ns)).toMatchObject({ accepted: 20_000, written: 0 });
    await sink.close();
    expect(sink.statsFor(ns).written).toBe(20_000);
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(20_000);
  });

  test("over the rate limit events are dropped, counted and reported", async () => {
    let now = 0;
    const reported: Array<[number, string]> = [];
    const sink = new StoreSink({
      store,
      rateLimit: { ratePerSecond: 10, burst: 100 },
      now: () => now,
      onDropped: (_t, n, reason) => reported.push([n, reason]),
    });
    const ns = randomUUID();
    sink.accept({ namespaceId: ns, linkId: null }, events(150, 2));
    now += 1000;
    sink.accept({ namespaceId: ns, linkId: null }, events(30, 3));
    await sink.close();
    expect(reported).toEqual([
      [50, "rate_limited"],
      [20, "rate_limited"],
    ]);
    expect(sink.statsFor(ns).dropped.rate_limited).toBe(70);
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(110);
  });

  test("a store that cannot keep up drops beyond the buffer instead of growing without bound", async () => {
    const sink = new StoreSink({ store, rateLimit: 0, maxBuffered: 100, batchSize: 1000 });
    const ns = randomUUID();
    sink.accept({ namespaceId: ns, linkId: null }, events(80));
    sink.accept({ namespaceId: ns, linkId: null }, events(80, 4));
    expect(sink.statsFor(ns).dropped.overloaded).toBe(60);
    await sink.close();
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(100);
  });

  test("the buffer is bounded by characters too: large events are dropped before the count bound", async () => {
    const sink = new StoreSink({ store, rateLimit: 0, batchSize: 1000, maxBuffered: 100, maxBufferedChars: 1_000_000 });
    const ns = randomUUID();
    const big = events(10, 8).map((e) => ({ ...e, http_req_body: "QUJD".repeat(75_000) })); // 300,000 characters each
    expect(sink.offer({ namespaceId: ns, linkId: null }, big)).toBe(7); // 3 fit in 1,000,000
    expect(sink.offer({ namespaceId: ns, linkId: null }, events(5, 9))).toBe(0); // small ones still fit
    expect(sink.statsFor(ns).dropped.overloaded).toBe(7);
    await sink.close();
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(8);
  });

  test("ingest tells the publisher in its ack how many accepted events the store dropped", async () => {
    const sink = new StoreSink({ store, rateLimit: 0, maxBuffered: 100, batchSize: 1000 });
    const sinks = new EventSinks();
    sinks.add(sink);
    const ingest = new Ingest(sinks, { rateLimit: 0 });
    const target = { namespaceId: randomUUID(), linkId: null };
    const first = ingest.handle(target, JSON.stringify({ type: "events", seq: 1, events: events(80) }));
    expect(first).toMatchObject({ type: "ack", seq: 1, accepted: 80 });
    expect(first).not.toHaveProperty("storeDropped");
    const second = ingest.handle(target, JSON.stringify({ type: "events", seq: 2, events: events(80, 4) }));
    expect(second).toMatchObject({ type: "ack", seq: 2, accepted: 80, storeDropped: 60 });
    await sink.close();
    expect((await store.queryRows(target.namespaceId, { filter: all })).actualNumberOfRows).toBe(100);
  });

  test("events of an anonymous link (no namespace) are not stored; store errors are counted", async () => {
    const lines: string[] = [];
    const restore = setLogSink((line) => lines.push(line));
    const sink = new StoreSink({ store, rateLimit: 0 });
    sink.accept({ namespaceId: null, linkId: "abc" }, events(10));
    sink.accept({ namespaceId: "not-a-uuid", linkId: null }, events(10));
    await sink.close();
    restore();
    expect(lines.join("\n")).toContain("store write failed");
    expect(await store.listNamespaces()).toEqual([]);
    expect(sink.statsFor("not-a-uuid").dropped.store_error).toBe(10);
  });

  test("a write that fails while the store is away is retried: nothing is lost and the ack waits for the write; past the retry window it is dropped and counted", async () => {
    const ns = randomUUID();
    let failures = 2;
    const flaky: EventStore = Object.create(store);
    flaky.insertRows = (namespaceId, batch) => {
      if (failures-- > 0) return Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:9000"));
      return store.insertRows(namespaceId, batch);
    };
    const sink = new StoreSink({ store: flaky, rateLimit: 0, batchSize: 50, flushIntervalMs: 20, retryForMs: 5_000 });
    const offered = sink.offerDurable({ namespaceId: ns, linkId: null }, events(50));
    expect(await offered.stored).toBe(0);
    expect(sink.statsFor(ns)).toMatchObject({ written: 50, dropped: { store_error: 0 } });
    expect((await store.queryRows(ns, { filter: all })).actualNumberOfRows).toBe(50);

    failures = Number.POSITIVE_INFINITY;
    const down = new StoreSink({ store: flaky, rateLimit: 0, batchSize: 50, flushIntervalMs: 20, retryForMs: 300 });
    const lost = down.offerDurable({ namespaceId: ns, linkId: null }, events(50, 2));
    expect(await lost.stored).toBe(50);
    expect(down.statsFor(ns).dropped.store_error).toBe(50);
    await sink.close();
    await down.close();
  });
});
