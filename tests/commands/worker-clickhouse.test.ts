import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";
import { TunnelClient } from "~/agent/query-client.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

const root = join(import.meta.dir, "../..");

/** `tapscope worker --clickhouse URL`: the org's events go to the worker's ClickHouse (Debian's 18.16 here). */
describe("self-hosted worker on ClickHouse", () => {
  let s: TunnelServer;
  let worker: Subprocess | undefined;
  let chUrl: string;
  let namespaceId = "";

  beforeAll(async () => {
    chUrl = await clickhouseUrl();
    s = await startTunnelServer();
  }, 120_000);
  afterAll(async () => {
    worker?.kill("SIGTERM");
    await worker?.exited;
    if (namespaceId) {
      const ch = await openClickHouseStore({ url: chUrl });
      await ch.dropNamespace(namespaceId).catch(() => {});
      await ch.close();
    }
    await s?.close();
  });

  test("ingest and queries go through the worker to ClickHouse", async () => {
    const owner = await s.onboardedUser();
    namespaceId = owner.namespaceId;
    const orgToken = await s.orgToken(owner);
    worker = spawn([process.execPath, "src/main.ts", "worker", "--server", s.base, "--token", orgToken, "--clickhouse", chUrl], {
      cwd: root,
      stdout: "ignore",
      stderr: "ignore",
    });
    const end = Date.now() + 20_000;
    while (!s.workers.hasRemote(owner.orgId) && Date.now() < end) await Bun.sleep(50);
    expect(s.workers.hasRemote(owner.orgId)).toBe(true);

    const now = Date.now();
    const events = ["/ch/1", "/ch/2"].map((p, i) =>
      makeEvent({ time: (now - 2000 + i * 1000) * 1000, http_req_path: p, http_resp_status_code: 500 + i }),
    );
    await s.ingest(owner.namespaceId, events);

    const c = await TunnelClient.open({
      endpoint: s.base,
      headers: { cookie: owner.cookie, origin: s.base },
      namespaceId: owner.namespaceId,
    });
    const filter = { clauses: [], global: { lowerMs: now - 3_600_000, upperMs: now + 60_000 } };
    const rows = await c.query({ kind: "rows", query: { filter }, filterText: "response.status >= 500" }, { compression: "gzip" });
    expect(rows.data.map((r) => r.http_req_path)).toEqual(["/ch/2", "/ch/1"]);
    const full = await c.query({ kind: "events", eventIds: events.map((e) => e.event_id), range: filter.global });
    expect(full.data.map((e) => e.http_resp_headers)).toEqual(events.map((e) => e.http_resp_headers));
    c.close();

    expect(await s.store!.listNamespaces()).not.toContain(owner.namespaceId);
    const ch = await openClickHouseStore({ url: chUrl });
    expect((await ch.queryRows(owner.namespaceId, { filter })).actualNumberOfRows).toBe(2);
    await ch.close();
  }, 60_000);
});
