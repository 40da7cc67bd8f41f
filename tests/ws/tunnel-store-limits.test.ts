import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TunnelClient } from "~/agent/query-client.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

/** The store's protections (per-namespace concurrency, query timeout) reach the client as database errors. */
describe("store limits through the tunnel", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);
  const filter = {
    clauses: [],
    global: { lowerMs: T0, upperMs: T0 + 3_600_000 },
  };

  beforeAll(async () => {
    s = await startTunnelServer({
      limits: { maxConcurrentQueries: 1, maxQueuedQueries: 0 },
    });
    owner = await s.onboardedUser();
    const events = Array.from({ length: 50_000 }, (_, i) =>
      makeEvent({
        time: (T0 + (i % 3_600_000)) * 1000 + i,
        http_req_path: `/p/${i % 997}`,
        http_resp_status_code: i % 7 === 0 ? 500 : 200,
      }),
    );
    await s.ingest(owner.namespaceId, events);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  test("over the per-namespace concurrency limit: a database error, the others answer", async () => {
    const c = await TunnelClient.open({
      endpoint: s.base,
      headers: { cookie: owner.cookie, origin: s.base },
      namespaceId: owner.namespaceId,
    });
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        c.send({
          kind: "rows",
          query: { filter },
          filterText: 'request.url matches "^/p/[0-9]+1$"',
        }),
      ),
    );
    const limited = results.filter((r) => r.databaseError === "too many queries at once for this namespace");
    const answered = results.filter((r) => r.databaseError === null && r.tunnelError === null);
    expect(limited.length).toBeGreaterThan(0);
    expect(answered.length).toBeGreaterThan(0);
    expect(limited.length + answered.length).toBe(8);
    c.close();
  }, 60_000);

  test("a query outliving the store's timeout: a database error", async () => {
    const slow = await startTunnelServer({ limits: { queryTimeoutMs: 1 } });
    try {
      const u = await slow.onboardedUser();
      const many = Array.from({ length: 30_000 }, (_, i) =>
        makeEvent({
          time: (T0 + (i % 3_600_000)) * 1000 + i,
          http_req_path: `/x/${i}`,
        }),
      );
      await slow.ingest(u.namespaceId, many);
      const c = await TunnelClient.open({
        endpoint: slow.base,
        headers: { cookie: u.cookie, origin: slow.base },
        namespaceId: u.namespaceId,
      });
      const r = await c.send({
        kind: "rows",
        query: { filter },
        filterText: 'request.url matches "(a|b|c)*[0-9]+9$"',
      });
      expect(r.databaseError).toBe("query timed out");
      c.close();
    } finally {
      await slow.close();
    }
  }, 120_000);
});
