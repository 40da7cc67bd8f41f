import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { LiveClient, RawWsClient } from "../../support/live-client.ts";
import { pollHealth, type ServerProcess, spawnServer } from "../../support/server-process.ts";

/**
 * Issue 28, High 2: on an anonymous link carrying 1 MB events, each viewer that completed the upgrade and never read
 * again cost the server about 13 MB (300 of them: 510 MB to 4.2 GB against MEMORY_LIMIT 1 GiB). What viewers hold
 * unsent now counts against a share of MEMORY_LIMIT (a sixteenth: 16 MiB here) and a bound per viewer; a viewer over
 * it is closed with 4408.
 */
const VIEWERS = 40;
const EVENTS = 30;
const BODY = "x".repeat(1_000_000);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.POSITIVE_INFINITY;
}

describe("viewers that never read cannot hold the server's memory", () => {
  let server: ServerProcess;

  beforeAll(async () => {
    server = await spawnServer({ env: { MEMORY_LIMIT: "256MiB" } });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
  });

  test(`${VIEWERS} stalled viewers of a link carrying 1 MB events are closed or turned away; memory and /api/health stay as with one reader`, async () => {
    const join = await fetch(`${server.endpoint}/api/JoinPublisher`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    const { websocketUrl, linkId } = (await join.json()) as { websocketUrl: string; linkId: string };
    const pub = await LiveClient.open(websocketUrl);
    await pub.until(() => pub.texts.some((m) => m.includes('"ready"')), "publisher ready");
    let seq = 0;
    /** Publishes `count` 1 MB events, one message each, waiting for each ack (stored and fanned out). */
    const publish = async (count: number) => {
      for (let i = 0; i < count; i++) {
        pub.send({ type: "events", seq: ++seq, events: [makeEvent({ http_req_path: `/${seq}`, http_resp_body: BODY })] });
        const want = seq;
        await pub.until(() => pub.texts.filter((m) => m.includes('"ack"')).length >= want, "ack", 30_000);
      }
    };
    const liveUrl = `/api/LiveSubscribe?link_id=${linkId}`;
    const reader = await LiveClient.open(`${server.endpoint.replace("http", "ws")}${liveUrl}`);

    // Baseline: the same flood with one viewer that reads, which also fills the link's history to its bound.
    const baselineHealth = pollHealth(server.endpoint, 20);
    await publish(EVENTS);
    const baseline = await baselineHealth.stop();
    await reader.until(() => reader.paths().length === EVENTS, "every event at the reader", 30_000);
    const rssBefore = server.rssBytes();

    // The attack: viewers that complete the upgrade, take the history, then never read again.
    const stalled = await Promise.all(Array.from({ length: VIEWERS }, () => RawWsClient.open(server.port, liveUrl)));
    for (const v of stalled) v.pause();
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, server.rssBytes());
    }, 20);
    const attackHealth = pollHealth(server.endpoint, 20);
    await publish(EVENTS);
    const during = await attackHealth.stop();
    clearInterval(sampler);
    await reader.until(() => reader.paths().length === 2 * EVENTS, "every event at the reader", 30_000);

    // Unbounded, 40 viewers hold 40 x (a 16 MiB history + what was sent since): over a GB. Bounded, the viewers
    // together hold at most 16 MiB before the slowest are closed (and what the kernel and the collector hold).
    const growthMb = (peak - rssBefore) / 1e6;
    expect(growthMb).toBeLessThan(300);
    expect(during.filter((ms) => !Number.isFinite(ms))).toEqual([]);
    expect(median(during)).toBeLessThan(median(baseline) * 10 + 50);
    // The reader was never closed. Each stalled viewer was turned away at once (1013: the budget was spent) or
    // closed once over it (4408, its connection ended at once when the close frame sat behind what it held).
    expect(reader.closeCode).toBeNull();
    for (const v of stalled) v.resume();
    const deadline = Date.now() + 10_000;
    while (stalled.some((v) => !v.isEnded) && Date.now() < deadline) await Bun.sleep(50);
    // Those that fit in the budget together may stay: a 16 MiB history or two.
    expect(stalled.filter((v) => !v.isEnded).length).toBeLessThanOrEqual(2);
    const codes = new Set(stalled.map((v) => v.closeCode));
    for (const code of codes) expect([null, 1013, 4408]).toContain(code);
    const turnedAway = stalled.find((v) => v.closeCode === 1013);
    if (turnedAway) expect(turnedAway.closeReason).toContain("try again");
    for (const v of stalled) v.destroy();
    reader.close();
    pub.close();
  }, 180_000);
});
