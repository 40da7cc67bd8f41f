import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { duckdbInsertBatchSize, openDuckDbStore } from "~/store/duckdb.ts";
import { tableName } from "~/store/table.ts";
import { testAddedField } from "./added-field.ts";
import { generateEvents } from "./generate.ts";

/** The embedded store's database file: how a full batch is written, and files from other versions. */
describe("DuckDB database file", () => {
  let dir: string;
  let path: string;
  const end = 1_760_000_000_000_000;
  const events = (count: number, seed: number) => generateEvents({ count, startMicros: end - 3_600_000_000, endMicros: end, seed });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tapscope-duckdb-file-"));
    path = join(dir, "events.duckdb");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const walBytes = () => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);

  test("a full batch goes straight into the file, compressed, not through the write-ahead log", async () => {
    const store = await openDuckDbStore({ path });
    const ns = randomUUID();
    const batch = events(duckdbInsertBatchSize, 1);
    const before = statSync(path).size;
    await store.insert(ns, batch);
    // Through the WAL the batch would be written uncompressed (~37 MB here) and rewritten at a checkpoint that
    // stalls the writer; straight into the file it takes a few MB once.
    expect(walBytes()).toBeLessThan(1024 * 1024);
    expect(statSync(path).size - before).toBeGreaterThan(1024 * 1024);
    expect(await store.countAll(ns)).toBe(duckdbInsertBatchSize);
    // A partial batch (the flush interval's) is stored too, through the log.
    await store.insert(ns, events(100, 2));
    expect(await store.countAll(ns)).toBe(duckdbInsertBatchSize + 100);
    await store.close();
  }, 60_000);

  test("batches written at once are each stored once; a delete asked for meanwhile waits for them", async () => {
    const store = await openDuckDbStore({ path });
    const ns = randomUUID();
    await store.ensureNamespace(ns);
    const batches = [1, 2, 3, 4].map((seed) => events(2_000, 10 + seed));
    const writes = batches.map((batch) => store.insert(ns, batch));
    // Asked while the four inserts are still running (two at a time): it must see all of them.
    const cutoff = end - 1_800_000_000;
    await store.deleteOlderThan(ns, cutoff);
    await Promise.all(writes);
    const kept = batches.flat().filter((e) => e.time >= cutoff);
    expect(kept.length).toBeGreaterThan(1_000);
    expect(kept.length).toBeLessThan(8_000);
    expect(await store.countAll(ns)).toBe(kept.length);
    const ids = await store.getEvents(
      ns,
      kept.slice(0, 50).map((e) => e.event_id),
    );
    expect(ids.length).toBe(50);
    await store.close();
  }, 60_000);

  test("a file opened directly by DuckDB (as earlier versions did) and by the store keeps every event", async () => {
    const ns = randomUUID();
    const first = await openDuckDbStore({ path });
    await first.insert(ns, events(500, 3));
    await first.close();

    const raw = await DuckDBInstance.create(path);
    const conn = await raw.connect();
    await conn.run(`INSERT INTO ${tableName(ns)} SELECT * FROM ${tableName(ns)} LIMIT 7`);
    conn.closeSync();
    raw.closeSync();

    const reopened = await openDuckDbStore({ path });
    expect(await reopened.listNamespaces()).toEqual([ns]);
    expect(await reopened.countAll(ns)).toBe(507);
    await reopened.insert(ns, events(10, 4));
    expect(await reopened.countAll(ns)).toBe(517);
    await reopened.close();
  }, 60_000);

  test("a table made before the TLS handshake column gets it on open: old rows read -1, new rows keep theirs", async () => {
    const ns = randomUUID();
    const first = await openDuckDbStore({ path });
    const old = events(20, 5);
    await first.insert(ns, old);
    await first.close();

    const raw = await DuckDBInstance.create(path);
    const conn = await raw.connect();
    await conn.run(`ALTER TABLE ${tableName(ns)} DROP COLUMN timing_tls`);
    conn.closeSync();
    raw.closeSync();

    const reopened = await openDuckDbStore({ path });
    const [before] = await reopened.getEvents(ns, [old[0]!.event_id]);
    expect(before!.timing_tls).toBe(-1);
    const fresh = { ...events(1, 6)[0]!, timing_tls: 1234 };
    await reopened.insert(ns, [fresh]);
    const [after] = await reopened.getEvents(ns, [fresh.event_id]);
    expect(after!.timing_tls).toBe(1234);
    expect(await reopened.countAll(ns)).toBe(21);
    await reopened.close();
  }, 60_000);

  testAddedField("DuckDB file", (fields) => openDuckDbStore({ path, fields }), 60_000);
});
