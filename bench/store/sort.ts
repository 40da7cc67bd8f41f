import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listColumns, type RowSort, type RowsQuery } from "~/lib/protocol/query.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { clickhouseUrl } from "../../tests/support/clickhouse.ts";
import { isSmoke, loadAverage, optionOf } from "../options.ts";

/**
 * The explorer's list sorted on the store: N events (default 1,000,000) over 24 hours inserted straight into each
 * store, then the list's page (listColumns, up to 10,000 rows) sorted by each column over the whole range, a deeper
 * page, and a 1 h focus. Baseline, run interleaved with each case: the newest-first page, the list's only query before
 * sorting moved to the store (it then sorted those 10,000 rows in the browser). Median wall ms of --runs.
 *   bun bench/store/sort.ts [--rows 1000000] [--runs 9] [--engines duckdb,clickhouse] [--smoke]
 * --smoke: 20,000 rows, one run of each case on DuckDB (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const rows = Number(arg("rows", "1000000", "20000"));
const runs = Number(arg("runs", "9", "1"));
const engines = arg("engines", "duckdb", "duckdb").split(",");

const hourMs = 3_600_000;
const endMs = Math.floor(Date.now() / hourMs) * hourMs;
const whole = { lowerMs: endMs - 24 * hourMs, upperMs: endMs };
const focus = { lowerMs: endMs - 7 * hourMs, upperMs: endMs - 6 * hourMs };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Inserts `rows` events cycling a pool of generated ones, each with a fresh id and its own time. */
async function fill(store: SqlEventStore, ns: string): Promise<void> {
  const pool = generateEvents({
    count: Math.min(rows, 50_000),
    startMicros: whole.lowerMs * 1000,
    endMicros: whole.upperMs * 1000,
    seed: 21,
    bodyBytes: 64,
  });
  const span = (whole.upperMs - whole.lowerMs) * 1000;
  const size = store.insertBatchSize;
  for (let i = 0; i < rows; i += size) {
    const batch = [];
    for (let j = i; j < Math.min(rows, i + size); j++) {
      batch.push({ ...pool[j % pool.length]!, event_id: randomUUID(), time: whole.lowerMs * 1000 + Math.floor((span * j) / rows) });
    }
    await store.insert(ns, batch);
  }
}

type Case = { name: string; sort: RowSort; offset?: number; focus?: boolean };
const cases: Case[] = [
  { name: "duration, slowest first", sort: { key: "http_duration", dir: "desc" } },
  { name: "duration, quickest first", sort: { key: "http_duration", dir: "asc" } },
  { name: "size, largest first", sort: { key: "http_resp_body_size_bytes_wire", dir: "desc" } },
  { name: "status, highest first", sort: { key: "http_resp_status_code", dir: "desc" } },
  { name: "method, a to z", sort: { key: "http_req_method", dir: "asc" } },
  { name: "URL, a to z", sort: { key: "http_req_path", dir: "asc" } },
  { name: "time, oldest first", sort: { key: "time", dir: "asc" } },
  { name: "duration, rows 50,001-60,000", sort: { key: "http_duration", dir: "desc" }, offset: 50_000 },
  { name: "duration, 1 h focus", sort: { key: "http_duration", dir: "desc" }, focus: true },
];

const table: string[] = [];
for (const engine of engines) {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-sort-"));
  const store =
    engine === "clickhouse"
      ? await openClickHouseStore({ url: await clickhouseUrl() })
      : await openDuckDbStore({ path: join(dir, "events.duckdb") });
  const ns = randomUUID();
  const t = performance.now();
  await fill(store, ns);
  console.log(`${engine}: ${rows.toLocaleString("en-US")} events over 24 h inserted in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const page = (c: { sort?: RowSort; offset?: number; focus?: boolean }) => {
    const query: RowsQuery = { filter: { clauses: [], global: whole, focus: c.focus ? focus : null }, columns: [...listColumns] };
    if (c.sort) query.sort = c.sort;
    if (c.offset) query.offset = c.offset;
    return store.queryRows(ns, query);
  };
  const time = async (fn: () => Promise<unknown>) => {
    const s = performance.now();
    await fn();
    return performance.now() - s;
  };
  for (const c of cases) {
    const baseline = { focus: c.focus };
    await page(c);
    await page(baseline);
    const measured: number[] = [];
    const base: number[] = [];
    // Interleaved, so the machine's load falls on both alike.
    for (let i = 0; i < runs; i++) {
      base.push(await time(() => page(baseline)));
      measured.push(await time(() => page(c)));
    }
    const m = median(measured);
    const b = median(base);
    const got = await page(c);
    const line = `| ${engine} | ${c.name} | ${got.data.length.toLocaleString("en-US")} of ${got.actualNumberOfRows.toLocaleString("en-US")} | **${m.toFixed(1)}** | ${b.toFixed(1)} | ${(m / b).toFixed(2)}x |`;
    table.push(line);
    console.log(line);
  }
  await store.dropNamespace(ns).catch((err: unknown) => console.log(`(drop failed: ${String(err)})`));
  await store.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

const load = await loadAverage();
console.log(
  `\n${rows.toLocaleString("en-US")} events, median of ${runs}; load average ${load}${isSmoke ? " (smoke: the figures mean nothing)" : ""}`,
);
console.log("| engine | sorted page (list columns) | rows | sorted (ms) | newest first, same run (ms) | sorted / newest |");
console.log("|---|---|---|---|---|---|");
for (const line of table) console.log(line);
