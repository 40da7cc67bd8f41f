import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { createPublisher } from "~/agent/publish.ts";
import { encodeEventBatch, setEventBatchResent } from "~/lib/protocol/event-batch.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { createRuntime } from "~/runtime.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { tableName } from "~/store/table.ts";
import { createTestPglite } from "../../support/pglite.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { seedNamespaceToken, spawnServer } from "../../support/server-process.ts";

/** Rows and distinct event ids in the namespace's table of a stopped server's DATA_DIR. */
async function stored(dataDir: string, namespaceId: string): Promise<{ rows: number; ids: number }> {
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  try {
    await conn.run(`ATTACH '${join(dataDir, "events.duckdb")}' AS ev`);
    const reader = await conn.runAndReadAll(
      `SELECT count(*)::INTEGER, count(DISTINCT event_id)::INTEGER FROM ev.${tableName(namespaceId)}`,
    );
    const [rows, ids] = reader.getRows()[0] ?? [0, 0];
    return { rows: Number(rows), ids: Number(ids) };
  } finally {
    conn.closeSync();
  }
}

test("kill -9 of the server mid-publish, started again: what was unanswered is sent again, every event stored once, none dropped", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-resend-"));
  try {
    const { namespaceId, token } = await seedNamespaceToken(dataDir, "resend");
    let server = await spawnServer({ dataDir, keepDataDir: true });
    const publisher = createPublisher({ endpoint: server.endpoint, token, reconnectMinMs: 100, reconnectMaxMs: 500 });
    await publisher.join();
    const total = 3000;
    let restarted: Promise<void> | null = null;
    for (let i = 0; i < total; i++) {
      publisher.send(sampleEvent({ time: Date.now() * 1000, event_id: crypto.randomUUID() }));
      if (i % 100 === 99) {
        publisher.flush();
        await Bun.sleep(30);
      }
      if (i === 1200) {
        // The server holds up to a second of events unwritten (its store sink's flush), their batches unanswered.
        expect(publisher.stats().inFlight).toBeGreaterThan(0);
        server.proc.kill("SIGKILL");
        await server.proc.exited;
        restarted = Bun.sleep(300).then(async () => {
          server = await spawnServer({ dataDir, keepDataDir: true, port: server.port });
        });
      }
    }
    await restarted;
    publisher.flush();
    const deadline = Date.now() + 30_000;
    while (publisher.stats().sent + publisher.stats().dropped < total && Date.now() < deadline) await Bun.sleep(50);
    const stats = await publisher.close(5000);
    server.proc.kill("SIGTERM");
    await server.proc.exited;
    console.log(
      `kill -9 and restart mid-publish: ${stats.sent} of ${total} acknowledged, ${stats.dropped} dropped, ${stats.reconnects} reconnects`,
    );
    expect([stats.sent, stats.dropped]).toEqual([total, 0]);
    expect(await stored(dataDir, namespaceId)).toEqual({ rows: total, ids: total });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);

test("a resent message's events already in the store are acknowledged as duplicates, not stored or shown again; the rest are stored", async () => {
  const database = await createTestPglite();
  const store = await openDuckDbStore({ path: ":memory:" });
  const config = parseConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-resend-")),
    SESSION_SECRET: "resend-test-secret-0123456789abcdef",
    PUBLIC_URL: "http://127.0.0.1:1",
  });
  const runtime = createRuntime({ config, db: database.db, store });
  const live: string[] = [];
  runtime.sinks.add({ accept: (_target, events) => live.push(...events.map((e) => e.event_id)) });
  const target = { namespaceId: crypto.randomUUID(), linkId: null };
  const events = (n: number) => Array.from({ length: n }, () => sampleEvent({ time: Date.now() * 1000, event_id: crypto.randomUUID() }));
  const count = async () =>
    (await store.histogram(target.namespaceId, { filter: { clauses: [], global: { lowerMs: 0, upperMs: Date.now() + 60_000 } } })).total;
  try {
    const first = events(10);
    const sent = runtime.ingest.receive(target, encodeEventBatch(1, first), undefined, runtime.ingest.resendLookups());
    expect(await sent.stored).toMatchObject({ type: "ack", accepted: 10 });

    // The same ten and five more, sent again after a lost connection, on a new socket.
    const more = events(5);
    const frame = encodeEventBatch(2, [...first, ...more]);
    setEventBatchResent(frame);
    const resent = runtime.ingest.receive(target, frame, undefined, runtime.ingest.resendLookups());
    expect(await resent.stored).toMatchObject({ type: "ack", seq: 2, accepted: 15, duplicates: 10, refused: 0 });
    expect(await count()).toBe(15);
    // The live view saw each event once.
    expect(live).toHaveLength(15);
    expect(new Set(live).size).toBe(15);

    // JSON (an older publisher's format) says the same with a field.
    const json = JSON.stringify({ type: "events", seq: 3, resent: true, events: [...more, ...events(1)] });
    expect(await runtime.ingest.receive(target, json, undefined, runtime.ingest.resendLookups()).stored).toMatchObject({
      accepted: 6,
      duplicates: 5,
    });
    expect(await count()).toBe(16);
    // Not marked resent: taken as new (a publisher marks only what went unanswered).
    expect(await runtime.ingest.receive(target, encodeEventBatch(4, more.slice(0, 1))).stored).toMatchObject({ accepted: 1 });
    expect(await count()).toBe(17);
  } finally {
    await runtime.close();
    await store.close();
    await database.close();
  }
}, 60_000);
