import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RouteTemplates } from "~/engines/routes/route-templates.ts";
import type { CapturedEvent, TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import type { EndpointRow, QueryFilter } from "~/lib/protocol/query.ts";
import { validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { clickhouseDialect } from "~/store/sql/dialect.ts";
import { rollupEndpointsSql, rollupSparklineSql } from "~/store/sql/endpoint-rollup.ts";
import { endpointsSql, planEndpoints, sparklineSql } from "~/store/sql/endpoints.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { tableName, toEventRows } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { clickhouseUrl } from "../../tests/support/clickhouse.ts";
import { isSmoke, loadAverage, optionOf } from "../options.ts";
import { generateInsideSql } from "./generate-inside.ts";

/**
 * bench:endpoints — the Endpoints table (p50/p95/p99 per endpoint, and the p95 sparkline) over 24 h, side by side with
 * the explorer's histogram on the same table and range (the query the screen sits next to), median of --runs after a
 * warm-up; on ClickHouse also the table's raw scan (what a filtered query runs) beside its per-minute rollup, and the
 * floor; then how far ClickHouse's t-digest percentiles are from DuckDB's exact ones on the same events, and what route
 * templating adds to the server's ingest CPU per event.
 *   bun bench/endpoints/run.ts [--sizes 1000000,10000000] [--engines duckdb,clickhouse] [--clickhouse-sizes 1000000]
 *     [--clickhouse-inside 10000000] [--runs 5]
 * --clickhouse-sizes are loaded through the store (the same events as DuckDB's); --clickhouse-inside are made inside
 * ClickHouse (generate-inside.ts: the same distributions, loaded in seconds), the rollup filling through its view.
 * --smoke: 2,000 events on each engine and 3,000 made inside ClickHouse, one run (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const sizes = arg("sizes", "1000000,10000000", "2000").split(",").map(Number);
const engines = arg("engines", "duckdb,clickhouse")
  .split(",")
  .filter((e) => e === "duckdb" || e === "clickhouse");
/** The sizes ClickHouse is loaded with (the target is 10M there). */
const clickhouseSizes = arg("clickhouse-sizes", "1000000", "2000")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
/** The sizes made inside ClickHouse instead. */
const clickhouseInside = arg("clickhouse-inside", "10000000", "3000")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const runs = Number(arg("runs", "5", "1"));

const hourMs = 3_600_000;
const endMs = Math.floor(Date.now() / hourMs) * hourMs;
const startMs = endMs - 24 * hourMs;
const filter: QueryFilter = { clauses: [], global: { lowerMs: startMs, upperMs: endMs }, focus: null };
const namespaceId = "00000000-0000-4000-8000-0000000000e5";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function medianMs(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

/** The same events on every engine (seeded), generated and inserted in chunks so 10M never sit in memory at once. */
async function load(store: SqlEventStore, count: number): Promise<void> {
  const chunk = 200_000;
  const chunks = Math.ceil(count / chunk);
  const spanMicros = (endMs - startMs) * 1000;
  const t = performance.now();
  for (let k = 0; k < chunks; k++) {
    const n = Math.min(chunk, count - k * chunk);
    const events = generateEvents({
      count: n,
      startMicros: startMs * 1000 + Math.floor((k * spanMicros) / chunks),
      endMicros: startMs * 1000 + Math.floor(((k + 1) * spanMicros) / chunks),
      seed: 1000 + k,
      bodyBytes: 0,
    });
    for (let i = 0; i < events.length; i += store.insertBatchSize)
      await store.insert(namespaceId, events.slice(i, i + store.insertBatchSize));
  }
  console.log(`  loaded ${count.toLocaleString("en")} events in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

/**
 * ClickHouse beside the table, on the same rows and range: the table's own statements with and without the rollup
 * (the raw ones are what a filtered query runs), the count-only GROUP BY that is the floor of any scan of the rows,
 * and the t-digest alone.
 */
async function clickhouseFloor(url: string): Promise<Record<string, number>> {
  const table = tableName(namespaceId);
  const range = { lowerMs: startMs, upperMs: endMs };
  const plan = planEndpoints({ filter, sparklinePoints: 30 }, range);
  const d = clickhouseDialect;
  const where = `time >= ${startMs * 1000} AND time < ${endMs * 1000}`;
  const http = `${where} AND protocol = 'http'`;
  const host = "if(http_is_outgoing = 1, http_req_host, '')";
  const queries: Record<string, string> = {
    "rollup: the table's rows": rollupEndpointsSql(table, range, plan) ?? "",
    "rollup: the sparklines": rollupSparklineSql(table, range, plan, 30_000) ?? "",
    "raw scan: the table's rows": endpointsSql(d, table, where, plan),
    "raw scan: the sparklines": sparklineSql(d, table, where, plan, startMs * 1000),
    "floor: GROUP BY the keys, count only": `SELECT service, http_is_outgoing AS o, ${host} AS host, http_req_method AS method, http_route AS route, count() FROM ${table} WHERE ${http} GROUP BY service, o, host, method, route`,
    "floor: t-digest alone, no grouping": `SELECT quantilesTDigest(0.5, 0.95, 0.99)(http_duration) FROM ${table} WHERE ${http}`,
  };
  const out: Record<string, number> = {};
  for (const [name, sql] of Object.entries(queries)) {
    out[name] = await medianMs(async () => {
      const res = await fetch(url, { method: "POST", body: `${sql} FORMAT TabSeparated` });
      if (!res.ok) throw new Error(`${name}: ${await res.text()}`);
      await res.arrayBuffer();
    });
  }
  return out;
}

/**
 * Waits (up to 3 minutes) until ClickHouse has no merge running: millions of rows made in seconds leave dozens of parts
 * that it merges in the background for a minute or so, taking the CPU the queries would be timed on; rows that arrive
 * as events do are merged as they come. Returns the milliseconds waited.
 */
async function mergesSettled(url: string): Promise<number> {
  const started = performance.now();
  let quiet = 0;
  while (quiet < 2 && performance.now() - started < 180_000) {
    const res = await fetch(url, { method: "POST", body: "SELECT count() FROM system.merges" });
    quiet = Number((await res.text()).trim()) === 0 ? quiet + 1 : 0;
    await Bun.sleep(isSmoke ? 10 : 1000);
  }
  return performance.now() - started;
}

/** The rollup's rows against the raw scan's on the same events: counts, errors, bytes and max equal; the percentiles' largest difference. */
async function rollupAgainstRaw(url: string): Promise<string> {
  const table = tableName(namespaceId);
  const range = { lowerMs: startMs, upperMs: endMs };
  const plan = planEndpoints({ filter, limit: 1000 }, range);
  const read = async (sql: string) => {
    const res = await fetch(url, { method: "POST", body: `${sql} FORMAT JSON` });
    if (!res.ok) throw new Error(await res.text());
    const rows = ((await res.json()) as { data: Record<string, unknown>[] }).data;
    return new Map(rows.map((r) => [JSON.stringify([r.service, r.o, r.host, r.method, r.route]), r]));
  };
  const rolled = await read(rollupEndpointsSql(table, range, plan) ?? "");
  const raw = await read(endpointsSql(clickhouseDialect, table, `time >= ${startMs * 1000} AND time < ${endMs * 1000}`, plan));
  let same = rolled.size === raw.size;
  let worst = 0;
  for (const [key, r] of raw) {
    const o = rolled.get(key);
    if (!o) {
      same = false;
      continue;
    }
    for (const k of ["n", "e4", "e5", "mx", "bin", "bout"]) if (Number(o[k]) !== Number(r[k])) same = false;
    for (const k of ["p50", "p95", "p99"]) {
      if (Number(r[k]) > 0) worst = Math.max(worst, Math.abs(Number(o[k]) - Number(r[k])) / Number(r[k]));
    }
  }
  return `rollup against raw scan, ${raw.size} endpoints: counts, errors, bytes, max ${same ? "equal" : "DIFFER"}; percentiles differ by at most ${(100 * worst).toFixed(2)} %`;
}

type Result = {
  engine: string;
  size: number;
  endpoints: number;
  histogram: number;
  latency: number;
  rows: number;
  quantiles: string;
  top: EndpointRow[];
};
const results: Result[] = [];

const cases = engines.flatMap(
  (engine): Array<{ engine: string; size: number; isInside: boolean }> =>
    engine === "clickhouse"
      ? [
          ...clickhouseSizes.map((size) => ({ engine, size, isInside: false })),
          ...clickhouseInside.map((size) => ({ engine, size, isInside: true })),
        ]
      : sizes.map((size) => ({ engine, size, isInside: false })),
);
for (const { engine, size, isInside } of cases) {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-endpoints-"));
  const store =
    engine === "clickhouse"
      ? await openClickHouseStore({ url: await clickhouseUrl() })
      : await openDuckDbStore({ path: join(dir, "events.duckdb") });
  console.log(`\n== ${engine}: ${size.toLocaleString("en")} events over 24 h${isInside ? ", made inside ClickHouse" : ""}`);
  await store.dropNamespace(namespaceId).catch(() => undefined);
  if (isInside) {
    const t = performance.now();
    await store.ensureNamespace(namespaceId);
    const res = await fetch(await clickhouseUrl(), {
      method: "POST",
      body: generateInsideSql(tableName(namespaceId), size, startMs * 1000, endMs * 1000),
    });
    if (!res.ok) throw new Error(await res.text());
    console.log(`  made ${size.toLocaleString("en")} events inside ClickHouse in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    console.log(`  background merges settled after ${((await mergesSettled(await clickhouseUrl())) / 1000).toFixed(1)} s more`);
  } else await load(store, size);
  const table = () => store.endpoints(namespaceId, { filter, sparklinePoints: 30 });
  const histogram = () => store.histogram(namespaceId, { filter });
  const latency = () => store.histogram(namespaceId, { filter, latency: true });
  // Interleaved, so the machine's noise falls on all three alike.
  const h = await medianMs(histogram);
  const e = await medianMs(table);
  const l = await medianMs(latency);
  const answer = await table();
  if (engine === "clickhouse") {
    const floor = await clickhouseFloor(await clickhouseUrl());
    console.log(`  beside the Endpoints table's ${e.toFixed(1)} ms and the histogram's ${h.toFixed(1)} ms (median of ${runs}):`);
    for (const [name, ms] of Object.entries(floor)) console.log(`    ${name}: ${ms.toFixed(1)} ms (${(ms / e).toFixed(2)} of the table)`);
    const rawTable = (floor["raw scan: the table's rows"] ?? 0) + (floor["raw scan: the sparklines"] ?? 0);
    const rolledTable = (floor["rollup: the table's rows"] ?? 0) + (floor["rollup: the sparklines"] ?? 0);
    console.log(
      `  rollup / raw scan (rows + sparklines, the same statements the store runs): ${rolledTable.toFixed(1)} / ${rawTable.toFixed(1)} ms = ${(rolledTable / rawTable).toFixed(2)}`,
    );
    console.log(`  ${await rollupAgainstRaw(await clickhouseUrl())}`);
  }
  results.push({
    engine: isInside ? "clickhouse, made inside" : engine,
    size,
    endpoints: e,
    histogram: h,
    latency: l,
    rows: answer.rows.length,
    quantiles: answer.quantiles,
    top: answer.rows.slice(0, 20),
  });
  console.log(
    `  endpoints ${e.toFixed(1)} ms (${answer.rows.length} rows), histogram ${h.toFixed(1)} ms, histogram with latency ${l.toFixed(1)} ms`,
  );
  await store.dropNamespace(namespaceId).catch((err: unknown) => console.log(`  (drop failed: ${String(err)})`));
  await store.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

const loadAfter = await loadAverage();
console.log(`\nload average after the queries: ${loadAfter} (${navigator.hardwareConcurrency} cores)`);
console.log(
  "\n| engine | events | Endpoints table (ms) | histogram (ms) | table / histogram | histogram + p50/p95/p99 (ms) | percentiles |",
);
console.log("|---|---|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.engine} | ${r.size.toLocaleString("en")} | **${r.endpoints.toFixed(1)}** | ${r.histogram.toFixed(1)} | ${(r.endpoints / r.histogram).toFixed(2)}x | ${r.latency.toFixed(1)} | ${r.quantiles} |`,
  );
}

// The t-digest's error: each endpoint's percentiles against DuckDB's exact ones on the same events.
for (const ch of results.filter((r) => r.engine === "clickhouse")) {
  const exact = results.find((r) => r.engine === "duckdb" && r.size === ch.size);
  if (!exact) continue;
  const key = (r: EndpointRow) => JSON.stringify([r.service, r.isOutgoing, r.host, r.method, r.route]);
  const errors = { p50: [] as number[], p95: [] as number[], p99: [] as number[] };
  for (const row of ch.top) {
    const e = exact.top.find((x) => key(x) === key(row));
    if (!e) continue;
    for (const q of ["p50", "p95", "p99"] as const) if (e[q] > 0) errors[q].push(Math.abs(row[q] - e[q]) / e[q]);
  }
  const worst = (xs: number[]) => `${(100 * Math.max(0, ...xs)).toFixed(2)} %`;
  console.log(
    `clickhouse t-digest against exact, ${ch.size.toLocaleString("en")} events, top ${errors.p95.length} endpoints: ` +
      `worst p50 ${worst(errors.p50)}, p95 ${worst(errors.p95)}, p99 ${worst(errors.p99)}`,
  );
}

// Route templating's share of the server's ingest CPU: a publish frame validated and turned into stored rows, with and
// without giving each event its route, in alternating rounds.
{
  const perFrame = 1000;
  const generated = generateEvents({ count: isSmoke ? 4000 : 100_000, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 9 });
  const frames: Uint8Array[] = [];
  for (let i = 0; i < generated.length; i += perFrame)
    frames.push(encodeEventBatch(i / perFrame, generated.slice(i, i + perFrame) as CapturedEvent[]));
  const routes = new RouteTemplates();
  const target = { namespaceId, linkId: null };
  const cpuMicros = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const round = (withRoutes: boolean): number => {
    const c = cpuMicros();
    for (const frame of frames) {
      const result = validateEventBatch(frame);
      if ("error" in result) throw new Error(result.message);
      const events: TracedEvent[] = result.events;
      if (withRoutes) routes.assign(target, events);
      toEventRows(events);
    }
    return (cpuMicros() - c) / generated.length;
  };
  round(true);
  round(false);
  const without: number[] = [];
  const withRoutes: number[] = [];
  for (let i = 0; i < (isSmoke ? 1 : 7); i++) {
    without.push(round(false));
    withRoutes.push(round(true));
  }
  const a = median(without);
  const b = median(withRoutes);
  console.log(
    `ingest CPU per event (validate + stored rows): without routes ${a.toFixed(2)} µs, with routes ${b.toFixed(2)} µs (with/without ${(b / a).toFixed(3)}); ` +
      `routes add ${(b - a).toFixed(2)} µs per event`,
  );
}
process.exit(0);
