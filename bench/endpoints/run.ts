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
import type { SqlEventStore } from "~/store/sql-store.ts";
import { toEventRows } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { clickhouseUrl } from "../../tests/support/clickhouse.ts";
import { isSmoke, optionOf } from "../options.ts";

/**
 * bench:endpoints — the Endpoints table (one grouped scan with p50/p95/p99 per endpoint, and the p95 sparkline) over
 * 24 h, side by side with the explorer's histogram on the same table and range (the query the screen sits next to),
 * median of --runs after a warm-up; then how far ClickHouse's t-digest percentiles are from DuckDB's exact ones on the
 * same events, and what route templating adds to the server's ingest CPU per event.
 *   bun bench/endpoints/run.ts [--sizes 1000000,10000000] [--engines duckdb,clickhouse] [--clickhouse-sizes 10000000] [--runs 5]
 * --smoke: 2,000 events on each engine, one run (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const sizes = arg("sizes", "1000000,10000000", "2000").split(",").map(Number);
const engines = arg("engines", "duckdb,clickhouse")
  .split(",")
  .filter((e) => e === "duckdb" || e === "clickhouse");
/** The sizes ClickHouse is loaded with (the target is 10M there). */
const clickhouseSizes = arg("clickhouse-sizes", "10000000", "2000").split(",").map(Number);
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
 * ClickHouse's floor beside the table, on the same rows and range: the table's grouped scan without its sparklines,
 * the same GROUP BY with only a count, the t-digest alone with no grouping, the grouped scan keyed on one hash of
 * the five keys, and the sparklines' query alone.
 */
async function clickhouseFloor(url: string): Promise<Record<string, number>> {
  const table = `events_${namespaceId.replaceAll("-", "")}`;
  const where = `time >= ${startMs * 1000} AND time < ${endMs * 1000} AND protocol = 'http'`;
  const host = "if(http_is_outgoing = 1, http_req_host, '')";
  const keys = `service, http_is_outgoing AS o, ${host} AS host, http_req_method AS method, http_route AS route`;
  const aggregates =
    "count() AS n, countIf(http_resp_status_code >= 400 AND http_resp_status_code < 500) AS e4, " +
    "countIf(http_resp_status_code >= 500) AS e5, quantilesTDigest(0.5, 0.95, 0.99)(http_duration) AS q, " +
    "max(http_duration) AS mx, sum(http_req_body_size_bytes_wire) AS bin, sum(http_resp_body_size_bytes_wire) AS bout";
  const step = Math.ceil((endMs - startMs) / 30) * 1000;
  const queries: Record<string, string> = {
    "grouped scan (the table without sparklines)": `SELECT ${keys}, ${aggregates} FROM ${table} WHERE ${where} GROUP BY service, o, host, method, route`,
    "grouped by one hash of the keys": `SELECT cityHash64(service, http_is_outgoing, ${host}, http_req_method, http_route) AS k, any(service), any(http_is_outgoing), any(${host}), any(http_req_method), any(http_route), ${aggregates} FROM ${table} WHERE ${where} GROUP BY k`,
    "floor: GROUP BY the keys, count only": `SELECT ${keys}, count() FROM ${table} WHERE ${where} GROUP BY service, o, host, method, route`,
    "floor: t-digest alone, no grouping": `SELECT quantilesTDigest(0.5, 0.95, 0.99)(http_duration) FROM ${table} WHERE ${where}`,
    "sparklines alone": `SELECT ${keys}, intDiv(time - ${startMs * 1000}, ${step}) AS s, quantilesTDigest(0.95)(http_duration) FROM ${table} WHERE ${where} GROUP BY service, o, host, method, route, s`,
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

for (const engine of engines) {
  for (const size of engine === "clickhouse" ? clickhouseSizes : sizes) {
    const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-endpoints-"));
    const store =
      engine === "clickhouse"
        ? await openClickHouseStore({ url: await clickhouseUrl() })
        : await openDuckDbStore({ path: join(dir, "events.duckdb") });
    console.log(`\n== ${engine}: ${size.toLocaleString("en")} events over 24 h`);
    await store.dropNamespace(namespaceId).catch(() => undefined);
    await load(store, size);
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
    }
    results.push({
      engine,
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
}

const loadAverage = (
  await Bun.file("/proc/loadavg")
    .text()
    .catch(() => "?")
)
  .split(" ")
  .slice(0, 3)
  .join(" ");
console.log(`\nload average after the queries: ${loadAverage} (${navigator.hardwareConcurrency} cores)`);
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
