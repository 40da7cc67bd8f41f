import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import { type Clause, listColumns, type QueryFilter } from "~/lib/protocol/query.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { clickhouseUrl } from "../../tests/support/clickhouse.ts";
import { loadAverage, optionOf } from "../options.ts";
import { publishThrough } from "./server.ts";

/**
 * bench:store — ingest through the real publisher WebSocket into each store, then the explorer's queries
 * (histogram + first page) against a plain COUNT(*) baseline on the same table, median of N runs.
 *   bun bench/store/run.ts [--rows 1000000] [--runs 20] [--engines duckdb,clickhouse] [--rate events-per-second] [--smoke]
 * --smoke: 2,000 rows, one run of each query (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const rows = Number(arg("rows", "1000000", "2000"));
const runs = Number(arg("runs", "20", "1"));
const engines = arg("engines", "duckdb,clickhouse").split(",");
/** Events per second the publisher offers (0: as fast as it can, which overruns the store and shows what it drops). */
const rate = Number(arg("rate", "0"));

const hourMs = 3_600_000;
const endMs = Math.floor(Date.now() / hourMs) * hourMs;
const startMs = endMs - 24 * hourMs;
const whole = { lowerMs: startMs, upperMs: endMs };
const focus = { lowerMs: endMs - 7 * hourMs, upperMs: endMs - 6 * hourMs };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
type Timing = { wall: number; cpu: number };
/** Wall time, and this process's CPU time (DuckDB's threads included; ClickHouse works in its own process). */
async function timeIt(fn: () => Promise<unknown>): Promise<Timing> {
  const c = process.cpuUsage();
  const t = performance.now();
  await fn();
  const u = process.cpuUsage(c);
  return { wall: performance.now() - t, cpu: (u.user + u.system) / 1000 };
}
async function medianOf(fn: () => Promise<unknown>): Promise<Timing> {
  await fn(); // warm-up
  const xs: Timing[] = [];
  for (let i = 0; i < runs; i++) xs.push(await timeIt(fn));
  return { wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) };
}
const fmt = (ms: number) => ms.toFixed(1).padStart(7);

type Case = { name: string; clauses: Clause[]; expressions: FilterExpr[] };
const cases: Case[] = [
  { name: "no filter", clauses: [], expressions: [] },
  {
    name: "status = 500",
    clauses: [{ type: "Number", column: "http_resp_status_code", op: "Equals", value: 500 }],
    expressions: [],
  },
  {
    name: "url contains /users/",
    clauses: [],
    expressions: [{ kind: "compare", field: "request.url", op: "contains", value: "/users/", pos: 0 }],
  },
  {
    name: "duration > 500ms",
    clauses: [],
    expressions: [{ kind: "compare", field: "duration", op: ">", value: 500_000, pos: 0 }],
  },
];

/** End to end through the publisher process (see publishThrough), printed. */
async function ingestThroughPublisher(store: SqlEventStore): Promise<{ namespaceId: string; perSecond: number }> {
  const r = await publishThrough(store, { rows, startMs, endMs, rate });
  console.log(
    `  ${rate > 0 ? `offered ${rate} events/s: ` : "unpaced: "}publisher sent ${r.sent}, dropped ${r.publisherDropped}; stored ${r.stored} in ${r.seconds.toFixed(1)} s ` +
      `=> ${Math.round(r.stored / r.seconds)} events/s end to end (publisher process -> WebSocket -> ingest -> store sink -> ${store.kind}); ` +
      `sink dropped ${JSON.stringify(r.sinkDropped)}; server process CPU ${r.cpuSeconds.toFixed(1)} s ` +
      `=> ${Math.round(r.stored / r.cpuSeconds)} events per server CPU-second`,
  );
  console.log(
    `  while publishing (${r.publishSeconds.toFixed(1)} s): ${Math.round(r.storedWhilePublishing / r.publishSeconds)} events/s stored; ` +
      `the rest stored ${(r.seconds - r.publishSeconds).toFixed(1)} s after the last send` +
      (rate > 0 && r.sinkDropped.overloaded === 0 && r.publisherDropped === 0
        ? `; the offered ${rate} events/s were sustained: nothing dropped`
        : ""),
  );
  return { namespaceId: r.namespaceId, perSecond: r.stored / r.seconds };
}

async function ingestDirect(store: SqlEventStore): Promise<number> {
  const ns = randomUUID();
  const n = Math.min(rows, 245_760);
  const events = generateEvents({ count: n, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 77 });
  const t = performance.now();
  const c = process.cpuUsage();
  const size = store.insertBatchSize;
  for (let i = 0; i < n; i += size) await store.insert(ns, events.slice(i, i + size));
  const perSecond = n / ((performance.now() - t) / 1000);
  const u = process.cpuUsage(c);
  console.log(`  store alone: ${Math.round(n / ((u.user + u.system) / 1e6))} events per CPU-second of this process`);
  await store.dropNamespace(ns);
  return perSecond;
}

type Row = {
  engine: string;
  range: string;
  name: string;
  hist: number;
  page: number;
  both: number;
  base: number;
  cpu: number;
};

async function queries(store: SqlEventStore, ns: string): Promise<Row[]> {
  const out: Row[] = [];
  for (const [range, f] of [
    ["whole 24 h", null],
    ["1 h focus", focus],
  ] as const) {
    for (const c of cases) {
      const filter: QueryFilter = { clauses: c.clauses, global: whole, focus: f };
      const hist = () => store.histogram(ns, { filter, expressions: c.expressions });
      const page = () => store.queryRows(ns, { filter, expressions: c.expressions, columns: [...listColumns] });
      // Baseline and measured case interleaved, so machine noise hits both alike.
      // Baseline: COUNT(*) over the same time range (a scan of the time column alone).
      const base = (await medianOf(() => store.countAll(ns, f ?? whole))).wall;
      const h = (await medianOf(hist)).wall;
      const p = (await medianOf(page)).wall;
      const bothTiming = await medianOf(() => Promise.all([hist(), page()]));
      const both = bothTiming.wall;
      const r = await page();
      out.push({ engine: store.kind, range, name: c.name, hist: h, page: p, both, base, cpu: bothTiming.cpu });
      console.log(
        `  ${range.padEnd(10)} ${c.name.padEnd(22)} hist ${fmt(h)} ms  page ${fmt(p)} ms (${String(r.data.length).padStart(5)} of ${String(r.actualNumberOfRows).padStart(7)})  both ${fmt(both)} ms (cpu ${fmt(bothTiming.cpu)} ms) | count(*) ${fmt(base)} ms  ratio ${(both / base).toFixed(1)}x`,
      );
    }
  }
  const all = await medianOf(() => store.queryRows(ns, { filter: { clauses: [], global: whole } }));
  console.log(`  whole 24 h, no filter, first page with all 37 columns: ${fmt(all.wall)} ms`);
  return out;
}

const results: Row[] = [];
const ingest: Record<string, { publisher: number; direct: number }> = {};
for (const engine of engines) {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-duck-"));
  const store =
    engine === "clickhouse"
      ? await openClickHouseStore({ url: await clickhouseUrl() })
      : await openDuckDbStore({ path: join(dir, "events.duckdb") });
  console.log(`\n== ${engine}: ${rows.toLocaleString("en")} events over 24 h`);
  const direct = await ingestDirect(store);
  console.log(`  store alone (insert batches of ${store.insertBatchSize}): ${Math.round(direct)} events/s`);
  const { namespaceId, perSecond } = await ingestThroughPublisher(store);
  ingest[engine] = { publisher: perSecond, direct };
  results.push(...(await queries(store, namespaceId)));
  // Cleanup must not lose the figures: a slow DROP on a starved machine is only reported.
  await store.dropNamespace(namespaceId).catch((err: unknown) => console.log(`  (drop failed: ${String(err)})`));
  await store.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

const load = await loadAverage();
console.log(`\nload average at the end: ${load} (2 cores)`);
console.log(
  `\n| case | ${engines.map((e) => `${e} hist / page / both (ms)`).join(" | ")} | ${engines.map((e) => `${e} count(*) baseline`).join(" | ")} |`,
);
console.log(`|---|${engines.map(() => "---").join("|")}|${engines.map(() => "---").join("|")}|`);
for (const r of results.filter((x) => x.engine === engines[0])) {
  const cells = engines.map((e) => {
    const x = results.find((y) => y.engine === e && y.range === r.range && y.name === r.name);
    return x
      ? `${x.hist.toFixed(1)} / ${x.page.toFixed(1)} / **${x.both.toFixed(1)}**${e === "duckdb" ? ` (cpu ${x.cpu.toFixed(1)})` : ""}`
      : "-";
  });
  const bases = engines.map((e) => {
    const x = results.find((y) => y.engine === e && y.range === r.range && y.name === r.name);
    return x ? `${x.base.toFixed(1)} (${(x.both / x.base).toFixed(1)}x)` : "-";
  });
  console.log(`| ${r.range}, ${r.name} | ${cells.join(" | ")} | ${bases.join(" | ")} |`);
}
for (const [e, v] of Object.entries(ingest)) {
  console.log(
    `ingest ${e}: ${Math.round(v.publisher)} events/s through the publisher WebSocket; ${Math.round(v.direct)} events/s store alone`,
  );
}
process.exit(0);
