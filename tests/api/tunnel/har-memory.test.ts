import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublisher } from "~/agent/publish.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { pollHealth, requestHar, type ServerProcess, seedNamespaceToken, spawnServer } from "../../support/server-process.ts";

/**
 * Issue 14 item 7: three concurrent DownloadHar calls of 100 events with 1 MiB bodies once took the server from
 * 1.6 GB to 5.1 GB of RSS, because each export held every event and the whole HAR text at once. Exports are
 * streamed now: the server's memory stays near where it was, and it keeps answering meanwhile.
 */
const BODY_BYTES = 1024 * 1024;
type Filled = { server: ServerProcess; seeded: Awaited<ReturnType<typeof seedNamespaceToken>>; events: number };

/** A server (MEMORY_LIMIT when given) holding `events` requests with 1 MiB bodies, published and stored. */
async function filledServer(events: number, memoryLimit?: string): Promise<Filled> {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-har-memory-"));
  const seeded = await seedNamespaceToken(dataDir, "har-memory");
  const server = await spawnServer({ dataDir, env: memoryLimit ? { MEMORY_LIMIT: memoryLimit } : {} });
  const publisher = createPublisher({ endpoint: server.endpoint, token: seeded.token });
  await publisher.join();
  const nowUs = Date.now() * 1000;
  // In rounds a store sink within its memory share takes whole (an ack means stored): on 512 MiB the buffer holds
  // about 58 million characters, and each event is about 2.8 million (the body's base64 and its search text).
  for (let i = 0; i < events; i++) {
    // Random bytes: nothing along the way can make them smaller than they are.
    publisher.send(
      sampleEvent({
        time: nowUs - (events - i) * 1000,
        http_resp_body: randomBytes(BODY_BYTES) as unknown as string,
        http_resp_body_size_bytes_wire: BODY_BYTES,
      }),
    );
    if (i % 20 === 19) {
      publisher.flush();
      const deadline = Date.now() + 60_000;
      while (publisher.stats().sent + publisher.stats().dropped < i + 1 && Date.now() < deadline) await Bun.sleep(20);
    }
  }
  const stats = await publisher.close(60_000);
  expect(stats.sent).toBe(events);
  expect(stats.storeDropped).toBe(0);
  return { server, seeded, events };
}

async function downloadAndCount({ server, seeded }: Filled): Promise<{ status: number; bytes: number; text: string }> {
  const res = await requestHar(server.endpoint, seeded);
  // Read as a client does, keeping only the first and last chunks (decoding all of it would load this process,
  // which also times /api/health) to check it is one whole JSON document.
  const reader = res.body!.getReader();
  let bytes = 0;
  let first: Uint8Array | undefined;
  let last: Uint8Array | undefined;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    bytes += chunk.value.length;
    first ??= chunk.value;
    last = chunk.value;
  }
  const decoder = new TextDecoder();
  const head = first ? decoder.decode(first.subarray(0, 200)) : "";
  const tail = last ? decoder.decode(last.subarray(-200)) : "";
  return { status: res.status, bytes, text: head + tail };
}

/** Three concurrent exports, each whole: every body in it (base64 grows 1 MiB to 1.33 MiB) and the JSON closed. */
async function threeWholeExports(filled: Filled): Promise<void> {
  const exports = await Promise.all([downloadAndCount(filled), downloadAndCount(filled), downloadAndCount(filled)]);
  for (const { status, bytes, text } of exports) {
    expect(status).toBe(200);
    // A short one says why in its comment.
    if (bytes <= filled.events * BODY_BYTES * 1.3)
      throw new Error(`a short HAR of ${bytes} bytes: ${text}\nserver log: ${filled.server.log().slice(-3000)}`);
    expect(text.startsWith('{"log":')).toBe(true);
    expect(text.trimEnd().endsWith("}")).toBe(true);
  }
}

describe("on the default MEMORY_LIMIT", () => {
  let filled: Filled;
  beforeAll(async () => {
    filled = await filledServer(100);
  }, 120_000);
  afterAll(() => filled?.server.kill());

  test("three concurrent HAR exports of 100 requests with 1 MiB bodies keep the server's memory bounded and /api/health answering", async () => {
    const { server } = filled;
    // The machine's own pace first: /api/health polled as long again with nothing else running on the server.
    const idle = pollHealth(server.endpoint, 20);
    await Bun.sleep(1500);
    const baseline = (await idle.stop()).sort((a, b) => a - b);
    const before = server.rssBytes();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, server.rssBytes());
    }, 20);
    const health = pollHealth(server.endpoint, 20);
    await threeWholeExports(filled);
    const latencies = await health.stop();
    clearInterval(sampler);
    // Three whole exports held at once would be over 3 x 140 MB of text, plus the events behind them.
    const growthMb = (peak - before) / 1e6;
    expect(growthMb).toBeLessThan(300);
    expect(latencies.length).toBeGreaterThan(10);
    // The entries are written on a Worker (har-writer.ts): what is left on the event loop is the store's read of a
    // page, its tunnel reply and a short full collection per 16 MiB of bodies. The old code, which also decoded each
    // reply and wrote each entry there, kept the typical answer waiting 50-100 ms and the slowest 100-1500 ms on an
    // idle machine, where the idle answer takes a few ms: the bounds are that idle pace, measured above, with room
    // for a loaded machine's own delays, and still below what the old code did.
    const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
    latencies.sort((a, b) => a - b);
    const idleMedian = quantile(baseline, 0.5);
    const idleP95 = quantile(baseline, 0.95);
    console.log(
      `health idle median ${idleMedian.toFixed(1)} ms, p95 ${idleP95.toFixed(1)}; during exports median ${quantile(latencies, 0.5).toFixed(1)}, p95 ${quantile(latencies, 0.95).toFixed(1)}, worst ${latencies.at(-1)!.toFixed(0)}`,
    );
    expect(quantile(latencies, 0.5)).toBeLessThan(3 * idleMedian + 25);
    expect(quantile(latencies, 0.95)).toBeLessThan(3 * idleP95 + 100);
    expect(latencies.at(-1)!).toBeLessThan(Math.max(1000, 4 * baseline.at(-1)!));
  }, 120_000);
});

describe("twelve concurrent exports by one caller", () => {
  let filled: Filled;
  beforeAll(async () => {
    filled = await filledServer(47);
  }, 120_000);
  afterAll(() => filled?.server.kill());

  test("two run, two wait their turn and eight are told to come back (429); memory stays bounded", async () => {
    const { server } = filled;
    const before = server.rssBytes();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, server.rssBytes());
    }, 20);
    const results = await Promise.all(Array.from({ length: 12 }, () => downloadAndCount(filled)));
    clearInterval(sampler);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(4).fill(200), ...Array(8).fill(429)]);
    for (const r of results.filter((r) => r.status === 200)) {
      expect(r.bytes).toBeGreaterThan(filled.events * BODY_BYTES * 1.3);
      expect(r.text.trimEnd().endsWith("}")).toBe(true);
    }
    expect(results.find((r) => r.status === 429)!.text).toContain("too many HAR exports at once");
    // The review's twelve at once took the server from 0.68 to 3.35 GB.
    expect((peak - before) / 1e6).toBeLessThan(300);
  }, 120_000);
});

/**
 * The exports' pages of full events, fetched all at once, ran DuckDB out of its share of memory ("Out of Memory
 * Error": every export cut short at 0 entries; flaky on the default MEMORY_LIMIT, certain on 512 MiB). They are
 * fetched one at a time now.
 */
describe("on a 512 MiB server", () => {
  let filled: Filled;
  beforeAll(async () => {
    filled = await filledServer(70, "512MiB");
  }, 120_000);
  afterAll(() => filled?.server.kill());

  test("three concurrent HAR exports of 70 requests with 1 MiB bodies are whole", async () => {
    await threeWholeExports(filled);
  }, 120_000);
});
