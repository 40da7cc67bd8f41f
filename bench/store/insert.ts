/**
 * DuckDB insert cost, side by side in one process: the store's insert against the previous encoding (one
 * JSON array per column, unnested with json_transform), same events, same batches, a database file each.
 * CPU per event counts every thread of the process, and closing the database (its checkpoint compresses
 * what the inserts left in the WAL), so storage costs are part of the figure.
 *
 * Then the store's insert in batches of its insertBatchSize (30,720 for DuckDB), against --batch (5,000: the store
 * sink's batch until session 3): with DuckDB's default row groups of 122,880 rows (session 3: every insert goes
 * through the WAL and a checkpoint), and with row groups of 30,720 (now: each insert is one row group, written
 * straight to the file). The database file's size after the checkpoint is printed too.
 *
 * With --engine clickhouse: the store's TabSeparated insert against the previous JSONEachRow rows, into a
 * ClickHouse started by the test support; CPU is this process plus the ClickHouse server (a child process).
 *
 *   bun bench/store/insert.ts [--engine duckdb|clickhouse] [--rows 245760] [--batch 5000] [--rounds 3] [--inflight 2]
 *   --smoke: 2,000 rows, one round (proves it runs, measures nothing).
 */

import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@clickhouse/client";
import { DuckDBInstance } from "@duckdb/node-api";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { duckdbInsertBatchSize as duckdbBatch, duckdbRowGroupSize, openDuckDbStore } from "~/store/duckdb.ts";
import { eventLayout, tableName } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { clickhouseUrl } from "../../tests/support/clickhouse.ts";

/** The stored columns as [name, stored type]. */
const eventColumns = eventLayout.columns.map((c) => [c.name as keyof TracedEvent, c.type] as const);

const { values: args } = parseArgs({
  options: {
    engine: { type: "string" },
    rows: { type: "string" },
    batch: { type: "string" },
    rounds: { type: "string" },
    inflight: { type: "string" },
    smoke: { type: "boolean" },
  },
});
const rows = Number(args.rows ?? (args.smoke ? 2000 : 245_760));
const batch = Number(args.batch ?? 5000);
const rounds = Number(args.rounds ?? (args.smoke ? 1 : 3));
const inflight = Number(args.inflight ?? 2);

const startMicros = Date.UTC(2026, 0, 10) * 1000;
const events = generateEvents({ count: rows, startMicros, endMicros: startMicros + 86_400_000_000, seed: 77 });

const duckType = { int: "BIGINT", flag: "UTINYINT", string: "VARCHAR", json: "VARCHAR" } as const;

/** The previous insert, kept here as the baseline. */
async function jsonColumns(path: string): Promise<(events: TracedEvent[]) => Promise<void>> {
  const instance = await DuckDBInstance.create(path, { checkpoint_threshold: "256MB" });
  const conn = await instance.connect();
  await conn.run(`CREATE TABLE t (${eventColumns.map(([n, k]) => `${n} ${duckType[k]} NOT NULL`).join(", ")})`);
  const sql = `INSERT INTO t SELECT ${eventColumns
    .map(([name, kind], i) => `unnest(json_transform($${i + 1}::VARCHAR, '["${duckType[kind]}"]')) AS ${name}`)
    .join(", ")}`;
  const insert = async (batch: TracedEvent[]) => {
    const sorted = [...batch].sort((a, b) => a.time - b.time);
    const stmt = await conn.prepare(sql);
    eventColumns.forEach(([name, kind], i) => {
      const values = sorted.map((e) => {
        const v = e[name];
        if (kind === "int") return Math.trunc(Number(v) || 0);
        if (kind === "flag") return v ? 1 : 0;
        if (kind === "json") return JSON.stringify(v ?? null).toWellFormed();
        return (typeof v === "string" ? v : String(v ?? "")).toWellFormed();
      });
      stmt.bindVarchar(i + 1, JSON.stringify(values));
    });
    await stmt.run();
  };
  // One at a time, encoding included, as the engine's write chain did.
  let chain: Promise<unknown> = Promise.resolve();
  return async (batch) => {
    if (batch.length === 0) {
      await chain;
      conn.closeSync();
      instance.closeSync();
      return;
    }
    const next = chain.then(() => insert(batch));
    chain = next;
    await next;
  };
}

/**
 * Opens the closed file once more and checkpoints it: whatever the close left undone (a WAL not yet folded
 * into the file) is paid for here, inside the measurement, whichever variant it was.
 */
async function checkpointed(path: string): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const conn = await instance.connect();
  await conn.run("CHECKPOINT");
  conn.closeSync();
  instance.closeSync();
}

/** The store's insert; rowGroupSize 122,880 (DuckDB's default) is the store before session 4. */
const currentStore =
  (rowGroupSize: number) =>
  async (path: string): Promise<(events: TracedEvent[]) => Promise<void>> => {
    const store = await openDuckDbStore({ path, readers: 1, rowGroupSize });
    const ns = randomUUID();
    return async (batch) => {
      if (batch.length === 0) await store.close();
      else await store.insert(ns, batch);
    };
  };

/** The previous ClickHouse insert (JSONEachRow objects), kept here as the baseline. */
async function jsonEachRow(): Promise<(events: TracedEvent[]) => Promise<void>> {
  const url = await clickhouseUrl();
  const store = await openClickHouseStore({ url });
  const client = createClient({ url, compression: { request: false, response: true }, keep_alive: { enabled: false } });
  const ns = randomUUID();
  await store.ensureNamespace(ns);
  const toRow = (e: TracedEvent) => {
    const row: Record<string, unknown> = {};
    for (const [name, kind] of eventColumns) {
      const v = e[name];
      if (kind === "int") row[name] = Math.trunc(Number(v) || 0);
      else if (kind === "flag") row[name] = v ? 1 : 0;
      else if (kind === "json") row[name] = JSON.stringify(v ?? null);
      else row[name] = typeof v === "string" ? v.toWellFormed() : String(v ?? "");
    }
    return row;
  };
  return async (batch) => {
    if (batch.length > 0) {
      await client.insert({ table: tableName(ns), values: batch.map(toRow), format: "JSONEachRow" });
      return;
    }
    await store.dropNamespace(ns);
    await Promise.all([client.close(), store.close()]);
  };
}

async function currentClickHouse(): Promise<(events: TracedEvent[]) => Promise<void>> {
  const store = await openClickHouseStore({ url: await clickhouseUrl() });
  const ns = randomUUID();
  return async (batch) => {
    if (batch.length > 0) return store.insert(ns, batch);
    await store.dropNamespace(ns);
    await store.close();
  };
}

/** DuckDB's own row group size. */
const defaultRowGroup = 122_880;

type Open = (path: string) => Promise<(events: TracedEvent[]) => Promise<void>>;
/** Each variant with the batch size it inserts in. */
const variants: Record<string, { open: Open; batch: number }> =
  args.engine === "clickhouse"
    ? {
        "JSONEachRow (before)": { open: jsonEachRow, batch },
        "TabSeparated (now)": { open: currentClickHouse, batch },
      }
    : {
        [`json columns, batches of ${batch} (session 1)`]: { open: jsonColumns, batch },
        [`separated columns, batches of ${batch} (session 2)`]: { open: currentStore(defaultRowGroup), batch },
        [`separated columns, batches of ${duckdbBatch}, row groups of ${defaultRowGroup} (session 3)`]: {
          open: currentStore(defaultRowGroup),
          batch: duckdbBatch,
        },
        [`separated columns, batches of ${duckdbBatch}, row groups of ${duckdbRowGroupSize} (now)`]: {
          open: currentStore(duckdbRowGroupSize),
          batch: duckdbBatch,
        },
      };

/** CPU of descendant processes (the ClickHouse server runs under the test support's watchdog), from /proc. */
function descendantCpuMicros(pid: number | "self" = "self"): number {
  let micros = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
    for (const child of children ? children.split(" ").map(Number) : []) {
      const stat = readFileSync(`/proc/${child}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      micros += (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, USER_HZ = 100
      micros += descendantCpuMicros(child);
    }
  }
  return micros;
}

/** CPU of the JS (main) thread alone: the one ingest, validation and the store sink share; DuckDB runs inserts on its own threads. */
function mainThreadCpuMicros(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system + (args.engine === "clickhouse" ? descendantCpuMicros() : 0);
};
const results = new Map<string, { cpu: number; js: number; wall: number; mb: number }[]>();
const dir = mkdtempSync(join(tmpdir(), "tapscope-insert-"));
try {
  for (let round = 0; round < rounds; round++) {
    for (const [label, { open, batch }] of Object.entries(variants)) {
      const path = join(dir, `${round}-${Object.keys(variants).indexOf(label)}.duckdb`);
      const insert = await open(path);
      Bun.gc(true);
      const cpu0 = cpuMicros();
      const js0 = mainThreadCpuMicros();
      const wall0 = performance.now();
      // Batches in flight as the store sink has them (writeConcurrency).
      let next = 0;
      const worker = async () => {
        while (next < rows) {
          const i = next;
          next += batch;
          await insert(events.slice(i, i + batch));
        }
      };
      await Promise.all(Array.from({ length: inflight }, worker));
      const js = (mainThreadCpuMicros() - js0) / rows; // before the close, whose checkpoint runs on this thread
      await insert([]); // close: the checkpoint is part of the cost
      if (args.engine !== "clickhouse") await checkpointed(path);
      const r = {
        cpu: (cpuMicros() - cpu0) / rows,
        js,
        wall: ((performance.now() - wall0) * 1000) / rows,
        mb: args.engine === "clickhouse" ? 0 : statSync(path).size / 1e6,
      };
      results.set(label, [...(results.get(label) ?? []), r]);
      console.log(
        `round ${round} ${label}: ${r.cpu.toFixed(2)} us CPU (JS thread ${r.js.toFixed(2)}), ${r.wall.toFixed(2)} us wall per event${r.mb ? `, file ${r.mb.toFixed(0)} MB` : ""}`,
      );
      rmSync(path, { force: true });
      rmSync(`${path}.wal`, { force: true });
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `\n${rows} events (${inflight} batches in flight), median and best of ${rounds} (load ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")})`,
);
for (const [label, rs] of results) {
  const cpu = median(rs.map((r) => r.cpu));
  const wall = median(rs.map((r) => r.wall));
  const js = median(rs.map((r) => r.js));
  const best = Math.min(...rs.map((r) => r.cpu));
  const mb = median(rs.map((r) => r.mb));
  console.log(
    `${label}: ${cpu.toFixed(2)} us CPU (best ${best.toFixed(2)}; JS thread ${js.toFixed(2)}) / ${wall.toFixed(2)} us wall per event = ${Math.round(1e6 / cpu)} events per CPU-second${mb ? `; file ${mb.toFixed(0)} MB` : ""}`,
  );
}
