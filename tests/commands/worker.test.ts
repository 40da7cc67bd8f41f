import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";
import { eq } from "drizzle-orm";
import { orgs } from "#db/schema/index.ts";
import { createPublisher } from "~/agent/publish.ts";
import { TunnelClient } from "~/agent/query-client.ts";
import { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { EndpointRow } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData } from "~/lib/protocol/tunnel.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

const root = join(import.meta.dir, "../..");
const bun = process.execPath;

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("self-hosted worker (tapscope worker subprocess)", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  let local: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  let workerDir: string;
  let orgToken: string;
  let worker: Subprocess | undefined;
  let stderr = "";

  function startWorker(): Subprocess {
    const child = spawn([bun, "src/main.ts", "worker", "--server", s.base, "--token", orgToken, "--data-dir", workerDir], {
      cwd: root,
      env: { ...process.env, TAPSCOPE_TOKEN: "" },
      stdout: "ignore",
      stderr: "pipe",
    });
    void (async () => {
      const reader = (child.stderr as ReadableStream<Uint8Array>).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        stderr += new TextDecoder().decode(value);
      }
    })();
    return child;
  }

  async function stopWorker(): Promise<void> {
    worker?.kill("SIGTERM");
    await worker?.exited;
    worker = undefined;
  }

  const open = () =>
    TunnelClient.open({
      endpoint: s.base,
      headers: { cookie: owner.cookie, origin: s.base },
      namespaceId: owner.namespaceId,
    });
  const range = () => ({
    clauses: [],
    global: { lowerMs: Date.now() - 3_600_000, upperMs: Date.now() + 60_000 },
  });

  beforeAll(async () => {
    s = await startTunnelServer();
    owner = await s.onboardedUser();
    local = await s.onboardedUser();
    orgToken = await s.orgToken(owner);
    workerDir = mkdtempSync(join(tmpdir(), "tapscope-worker-"));
  }, 60_000);
  afterAll(async () => {
    await stopWorker();
    await s?.close();
    rmSync(workerDir, { recursive: true, force: true });
  });

  test("a namespace token is refused as a worker token", async () => {
    const nsToken = await s.namespaceToken(owner);
    const child = spawn([bun, "src/main.ts", "worker", "--server", s.base, "--token", nsToken], {
      cwd: root,
      stderr: "pipe",
      stdout: "ignore",
    });
    expect(await child.exited).toBe(2);
    expect(await new Response(child.stderr as ReadableStream).text()).toContain("org worker token");
  });

  test("connects out; the org's published events land in the worker's DuckDB and queries go through it", async () => {
    worker = startWorker();
    await until(() => s.workers.hasRemote(owner.orgId), "worker connected");
    const [seen] = await s.db.select({ t: orgs.lastSeenWorkerTime }).from(orgs).where(eq(orgs.id, owner.orgId));
    expect(seen!.t).toBeInstanceOf(Date);

    const nsToken = await s.namespaceToken(owner);
    const publisher = createPublisher({ endpoint: s.base, token: nsToken });
    await publisher.join();
    const now = Date.now();
    const events: TracedEvent[] = ["/w/a", "/w/b", "/w/c"].map((p, i) =>
      makeEvent({ time: (now - 1000 * (3 - i)) * 1000, http_req_path: p }),
    );
    for (const e of events) publisher.send(e);
    const stats = await publisher.close(5000);
    expect(stats.sent).toBe(3);
    await s.flush();

    // Another org (no worker) keeps using the server's own store.
    await s.ingest(local.namespaceId, [makeEvent({ http_req_path: "/local" })]);

    const c = await open();
    const rows = await c.query({ kind: "rows", query: { filter: range() } }, { compression: "gzip" });
    expect(rows.data.map((r) => r.http_req_path)).toEqual(["/w/c", "/w/b", "/w/a"]);
    const detail = await c.query({
      kind: "event",
      eventId: events[0]!.event_id,
    });
    expect(detail.data[0]!.http_resp_body).toBe(events[0]!.http_resp_body);
    const hist = await c.query({ kind: "histogram", query: { filter: range() } }, { compression: "none" });
    expect(hist.total).toBe(3);
    // The Endpoints table too, from the worker's store, with the routes the server's ingest gave the events.
    const table = await c.query({ kind: "endpoints", query: { filter: range() } }, { compression: "gzip" });
    expect((table.data as unknown as EndpointRow[]).map((r) => [r.route, r.requests]).sort()).toEqual([
      ["/w/a", 1],
      ["/w/b", 1],
      ["/w/c", 1],
    ]);
    expect(table.quantiles).toBe("exact");
    c.close();

    // The server holds no event data for that org.
    const onServer = await s.store!.listNamespaces();
    expect(onServer).not.toContain(owner.namespaceId);
    expect(onServer).toContain(local.namespaceId);

    // HAR download for the dashboard goes through the worker too.
    const har = await fetch(`${s.base}/api/DownloadHar?namespaceId=${owner.namespaceId}&eventId=${events[1]!.event_id}`, {
      headers: { cookie: owner.cookie },
    });
    expect(har.status).toBe(200);
    expect((await har.json()).log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname)).toEqual(["/w/b"]);

    // Stop the worker: queries and ingest for the org fail clearly instead of landing on the server.
    await stopWorker();
    await until(() => !s.workers.hasRemote(owner.orgId), "worker gone");
    const c2 = await open();
    const away = await c2.send({ kind: "rows", query: { filter: range() } });
    expect(away.tunnelError).toBe("the org's worker is not connected");
    c2.close();
    await s.ingest(owner.namespaceId, [makeEvent({ http_req_path: "/while-away" })]);
    expect(await s.store!.listNamespaces()).not.toContain(owner.namespaceId);

    // A restarted server remembers the org has a worker: nothing lands locally before it reconnects.
    const restarted = new WorkerRegistry({ db: s.db, local: s.store, statePath: join(s.dataDir, "worker-orgs.json") });
    await expect(restarted.insert(owner.namespaceId, [makeEvent()])).rejects.toThrow("the org's worker is not connected");
    await restarted.insert(local.namespaceId, [makeEvent({ http_req_path: "/local-2" })]);
    expect(await s.store!.listNamespaces()).not.toContain(owner.namespaceId);

    // The data is in the worker's own DuckDB file.
    const file = await openDuckDbStore({
      path: join(workerDir, "events.duckdb"),
    });
    const kept = await file.queryRows(owner.namespaceId, { filter: range() });
    expect(kept.data.map((r) => r.http_req_path)).toEqual(["/w/c", "/w/b", "/w/a"]);
    await file.close();

    // A restarted worker reconnects and serves the same data.
    worker = startWorker();
    await until(() => s.workers.hasRemote(owner.orgId), "worker reconnected");
    const c3 = await open();
    expect((await c3.query({ kind: "rows", query: { filter: range() } })).actualNumberOfRows).toBe(3);
    c3.close();
    expect(stderr).toContain("connected to");
  }, 60_000);

  test("the worker reconnects by itself after the server restarts its side", async () => {
    worker ??= startWorker();
    await until(() => s.workers.hasRemote(owner.orgId), "worker connected");
    // Drop the server side of the socket: the worker must come back (backoff from 0.5 s).
    s.app.server!.stop(true);
    await until(() => !s.workers.hasRemote(owner.orgId), "worker dropped");
    s.app.listen({ port: s.port, hostname: "127.0.0.1" });
    await until(() => s.workers.hasRemote(owner.orgId), "worker back", 20_000);
    const c = await open();
    expect((await c.query({ kind: "rows", query: { filter: range() } })).actualNumberOfRows).toBe(3);
    c.close();
  }, 40_000);

  test("a result bigger than a WebSocket frame comes from the worker in parts and arrives whole", async () => {
    worker ??= startWorker();
    await until(() => s.workers.hasRemote(owner.orgId), "worker connected");
    const now = Date.now();
    // 14 bodies of 1 MiB of random bytes: about 20 MB of result, over the server's 8 MiB frame limit.
    const events = Array.from({ length: 14 }, (_, i) =>
      makeEvent({ time: (now - 500 + i) * 1000, http_req_path: `/big/${i}`, http_resp_body: randomBytes(1024 * 1024).toString("base64") }),
    );
    await s.ingest(owner.namespaceId, events);
    const frame = await s.workers.dispatch({
      namespaceId: owner.namespaceId,
      orgId: owner.orgId,
      role: "SELECT",
      request: {
        queryId: "big",
        tags: { namespaceId: owner.namespaceId, orgId: owner.orgId },
        compression: "none",
        want: { kind: "events", eventIds: events.map((e) => e.event_id) },
      },
    });
    expect(frame.length).toBeGreaterThan(16 * 1024 * 1024);
    const result = decodeResult(frame);
    expect(result.tunnelError).toBeNull();
    const data = await decodeResultData(result);
    expect(data.data.map((e) => e.http_req_path).sort()).toEqual(events.map((e) => e.http_req_path).sort());
    const sent = new Map(events.map((e) => [e.event_id, e.http_resp_body]));
    for (const e of data.data) expect(e.http_resp_body === sent.get(String(e.event_id))).toBe(true);
    // The socket carried on: the next query answers.
    const c = await open();
    expect((await c.query({ kind: "rows", query: { filter: range() } })).actualNumberOfRows).toBeGreaterThan(14);
    c.close();
  }, 60_000);

  test("a worker whose org token is deleted is disconnected at its next heartbeat and stays out", async () => {
    const admin = await s.onboardedUser();
    const gen = await s.call("/api/GenerateOrgToken", { orgId: admin.orgId }, { cookie: admin.cookie });
    const dir = mkdtempSync(join(tmpdir(), "tapscope-worker-"));
    const child = spawn(
      [bun, "src/main.ts", "worker", "--server", s.base, "--token", gen.body.token, "--data-dir", dir, "--heartbeat-ms", "200"],
      {
        cwd: root,
        stdout: "ignore",
        stderr: "ignore",
      },
    );
    try {
      await until(() => s.workers.hasRemote(admin.orgId), "worker connected");
      expect((await s.call("/api/DeleteOrgToken", { tokenId: gen.body.tokenId }, { cookie: admin.cookie })).status).toBe(200);
      await until(() => !s.workers.hasRemote(admin.orgId), "worker sent away");
      await Bun.sleep(1500);
      expect(s.workers.hasRemote(admin.orgId)).toBe(false);
      // Its events are the server's to keep again.
      await s.ingest(admin.namespaceId, [makeEvent({ http_req_path: "/back-home" })]);
      expect(await s.store!.listNamespaces()).toContain(admin.namespaceId);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  test("a second worker for the org takes over; the first stops instead of fighting for the org", async () => {
    const admin = await s.onboardedUser();
    const token = await s.orgToken(admin);
    const dirs = [mkdtempSync(join(tmpdir(), "tapscope-worker-")), mkdtempSync(join(tmpdir(), "tapscope-worker-"))];
    const start = (dir: string) =>
      spawn([bun, "src/main.ts", "worker", "--server", s.base, "--token", token, "--data-dir", dir], {
        cwd: root,
        stdout: "ignore",
        stderr: "pipe",
      });
    const first = start(dirs[0]!);
    let second: Subprocess | undefined;
    try {
      await until(() => s.workers.hasRemote(admin.orgId), "first worker connected");
      second = start(dirs[1]!);
      expect(await first.exited).toBe(1);
      expect(await new Response(first.stderr as ReadableStream).text()).toContain("another worker connected for this org and took over");
      await until(() => s.workers.hasRemote(admin.orgId), "second worker serving");
      await s.ingest(admin.namespaceId, [makeEvent({ http_req_path: "/to-second" })]);
      const c = await TunnelClient.open({
        endpoint: s.base,
        headers: { cookie: admin.cookie, origin: s.base },
        namespaceId: admin.namespaceId,
      });
      expect((await c.query({ kind: "rows", query: { filter: range() } })).data.map((r) => r.http_req_path)).toEqual(["/to-second"]);
      c.close();
    } finally {
      first.kill("SIGTERM");
      second?.kill("SIGTERM");
      await second?.exited;
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  }, 40_000);
});
