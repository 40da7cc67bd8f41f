import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublisher } from "~/agent/publish.ts";
import { TunnelClient } from "~/agent/query-client.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { type ServerProcess, seedNamespaceToken, spawnServer } from "../../support/server-process.ts";

/**
 * Issue 14 item 1: a huge time range once looped forever in the bucket maths and froze the whole server. The
 * server runs as its own process here, so a frozen one fails the test instead of the test runner.
 */
describe("time ranges are bounded where they enter", () => {
  let server: ServerProcess | undefined;
  let endpoint = "";
  let token = "";
  let namespaceId = "";

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tapscope-ranges-"));
    ({ token, namespaceId } = await seedNamespaceToken(dataDir, "ranges"));
    server = await spawnServer({ dataDir });
    endpoint = server.endpoint;
    // A stored event, so queries reach the store's bucketing rather than stopping at an empty namespace.
    const publisher = createPublisher({ endpoint, token });
    await publisher.join();
    publisher.send(sampleEvent());
    publisher.flush();
    const deadline = Date.now() + 10_000;
    while (publisher.stats().sent < 1 && Date.now() < deadline) await Bun.sleep(5);
    await publisher.close(1000);
  }, 60_000);

  afterAll(async () => {
    await server?.kill();
  });

  const downloadHar = (global: unknown, focus: unknown = null) =>
    fetch(`${endpoint}/api/DownloadHar`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ namespaceId, filter: { clauses: [], global, focus } }),
      signal: AbortSignal.timeout(5000),
    });

  test("DownloadHar with upperMs 1e300 is a quick 400 that says why, and /api/health answers meanwhile as fast as before", async () => {
    const healthMsOf = async () => {
      const started = performance.now();
      const res = await fetch(`${endpoint}/api/health`, { signal: AbortSignal.timeout(15_000) });
      expect(res.status).toBe(200);
      return performance.now() - started;
    };
    const baselineMs = Math.min(await healthMsOf(), await healthMsOf(), await healthMsOf());
    const now = Date.now();
    const attacks = [
      downloadHar({ lowerMs: 0, upperMs: 1e300 }),
      downloadHar({ lowerMs: now - 3_600_000, upperMs: 1e300 }),
      downloadHar({ lowerMs: now - 3_600_000, upperMs: now + 30 * 86_400_000 }),
      downloadHar({ lowerMs: now - 900 * 86_400_000, upperMs: now }),
      downloadHar({ lowerMs: now - 3_600_000, upperMs: now }, { lowerMs: now - 60_000, upperMs: 1e300 }),
    ];
    // Asked while the attacks are in flight: an event loop walking a range to 1e300 never answers.
    expect(await healthMsOf()).toBeLessThan(baselineMs * 20 + 500);

    const answers = await Promise.all(attacks);
    for (const res of answers) {
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBeString();
    }
    const wordsOf = async (global: unknown, focus: unknown = null) => (await (await downloadHar(global, focus)).json()).error as string;
    expect(await wordsOf({ lowerMs: now - 3_600_000, upperMs: now + 30 * 86_400_000 })).toBe(
      "global time range ends more than a day from now",
    );
    expect(await wordsOf({ lowerMs: now - 3_600_000, upperMs: now }, { lowerMs: now - 60_000, upperMs: 1e300 })).toContain("focus");

    // The server is still whole: an ordinary export works.
    const ok = await downloadHar({ lowerMs: now - 3_600_000, upperMs: now + 60_000 });
    expect(ok.status).toBe(200);
    expect((await ok.json()).log.entries).toHaveLength(1);
  }, 30_000);

  test("a query tunnel with a huge range gets an error reply naming the range; the tunnel keeps working", async () => {
    const client = await TunnelClient.open({ endpoint, token, role: "SELECT", timeoutMs: 5000 });
    try {
      const now = Date.now();
      const reply = (global: unknown) =>
        Promise.race([
          client.send({ kind: "histogram", query: { filter: { clauses: [], global: global as { lowerMs: number; upperMs: number } } } }),
          Bun.sleep(5000).then(() => null),
        ]);
      const huge = await reply({ lowerMs: 0, upperMs: 1e300 });
      expect(huge?.tunnelError).toBe("global time range must be whole milliseconds");
      expect(huge?.queryId).toBe("q1");
      const infinite = await reply({ lowerMs: now - 3_600_000, upperMs: "Infinity" });
      expect(infinite?.tunnelError).toBe("global time range must be whole milliseconds");
      const reversed = await reply({ lowerMs: now, upperMs: now - 3_600_000 });
      expect(reversed?.tunnelError).toContain("is empty");
      const rows = await Promise.race([
        client.send({
          kind: "rows",
          query: {
            filter: { clauses: [], global: { lowerMs: now - 3_600_000, upperMs: now }, focus: { lowerMs: now - 60_000, upperMs: 1e300 } },
          },
        }),
        Bun.sleep(5000).then(() => null),
      ]);
      expect(rows?.tunnelError).toBe("focus time range must be whole milliseconds");

      const started = performance.now();
      const health = await fetch(`${endpoint}/api/health`, { signal: AbortSignal.timeout(2000) });
      expect(health.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(100);
      const histogram = await client.query({
        kind: "histogram",
        query: { filter: { clauses: [], global: { lowerMs: now + 1000 - 3_600_000, upperMs: now + 1000 } } },
      });
      expect(histogram.bucketMs).toBe(30_000);
      expect(histogram.total).toBe(1);
    } finally {
      client.close();
    }
  }, 30_000);
});
