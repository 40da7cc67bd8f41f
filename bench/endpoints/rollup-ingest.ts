import { readFileSync } from "node:fs";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { rollupView } from "~/store/sql/endpoint-rollup.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { tableName } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { startClickHouseServer } from "../../tests/support/clickhouse.ts";
import { isSmoke, optionOf } from "../options.ts";

/**
 * What ClickHouse's per-minute Endpoints rollup costs at ingest (ADR 0035): the same events inserted through the store
 * into two namespaces of one ClickHouse, one as the store makes every table (its materialized view fills the rollup on
 * each insert) and one with the view dropped (the table as it was before the rollup), alternated in rounds. Measured:
 * the ClickHouse server's CPU per event (utime + stime from /proc, the view's work is done there) and the wall time of
 * the store's inserts (an insert returns once the view's part is written too).
 *   bun bench/endpoints/rollup-ingest.ts [--events 200000] [--rounds 3] [--smoke]
 * --smoke: 4,000 events, one round (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const count = Number(arg("events", "200000", "4000"));
const rounds = Number(arg("rounds", "3", "1"));

const hourMs = 3_600_000;
const endMs = Math.floor(Date.now() / hourMs) * hourMs;
const startMs = endMs - 24 * hourMs;
const withView = "00000000-0000-4000-8000-00000000a001";
const withoutView = "00000000-0000-4000-8000-00000000a002";

const server = await startClickHouseServer();
const pid = Number(
  Bun.spawnSync(["pgrep", "-f", `config-file=${server.dir}/config.xml`])
    .stdout.toString()
    .trim()
    .split("\n")[0],
);
if (!Number.isInteger(pid) || pid <= 0) throw new Error("could not find the ClickHouse server's process");
const ticksPerSecond = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** The ClickHouse server's CPU seconds so far (all its threads). */
function serverCpuSeconds(): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

async function sql(query: string): Promise<void> {
  const res = await fetch(server.url, { method: "POST", body: query });
  if (!res.ok) throw new Error(`${query}: ${await res.text()}`);
  await res.arrayBuffer();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Inserts the events in the store's batches; the server's CPU and the wall time, per event in µs. */
async function insert(store: SqlEventStore, ns: string, round: number): Promise<{ cpu: number; wall: number }> {
  // Fresh ids and the same times each round: the same work for both namespaces.
  const events = generateEvents({ count, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 7 + round, bodyBytes: 0 });
  const cpu = serverCpuSeconds();
  const t = performance.now();
  for (let i = 0; i < events.length; i += store.insertBatchSize) await store.insert(ns, events.slice(i, i + store.insertBatchSize));
  const wall = performance.now() - t;
  return { cpu: ((serverCpuSeconds() - cpu) * 1e6) / count, wall: (wall * 1000) / count };
}

const store = await openClickHouseStore({ url: server.url });
try {
  // Both tables made by the store (each with its view), then the second one's view dropped.
  const seed = generateEvents({ count: 1, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 1, bodyBytes: 0 });
  await store.insert(withView, seed);
  await store.insert(withoutView, seed);
  await sql(`DROP TABLE ${rollupView(tableName(withoutView))}`);

  const results = { with: [] as Array<{ cpu: number; wall: number }>, without: [] as Array<{ cpu: number; wall: number }> };
  await insert(store, withView, 0);
  await insert(store, withoutView, 0);
  for (let r = 1; r <= rounds; r++) {
    // Each round in the other order, so neither side always runs first.
    const order = r % 2 === 1 ? (["with", "without"] as const) : (["without", "with"] as const);
    for (const side of order) results[side].push(await insert(store, side === "with" ? withView : withoutView, r));
  }
  const cpuWith = median(results.with.map((x) => x.cpu));
  const cpuWithout = median(results.without.map((x) => x.cpu));
  const wallWith = median(results.with.map((x) => x.wall));
  const wallWithout = median(results.without.map((x) => x.wall));
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(
    `rollup at ingest: ${count.toLocaleString("en")} events per insert run, ${rounds} rounds, ClickHouse, batches of ${store.insertBatchSize}`,
  );
  console.log("\n| table | ClickHouse CPU per event (µs) | store insert wall per event (µs) |");
  console.log("|---|---|---|");
  console.log(`| without the rollup's view (before) | ${cpuWithout.toFixed(2)} | ${wallWithout.toFixed(2)} |`);
  console.log(`| with the rollup's view (now) | ${cpuWith.toFixed(2)} | ${wallWith.toFixed(2)} |`);
  console.log(
    `\nthe view adds ${(cpuWith - cpuWithout).toFixed(2)} µs of ClickHouse CPU per event (with/without ${(cpuWith / cpuWithout).toFixed(2)}), wall with/without ${(wallWith / wallWithout).toFixed(2)}`,
  );
  console.log(
    `rounds, CPU µs with: ${results.with.map((x) => x.cpu.toFixed(2)).join(" ")}; without: ${results.without.map((x) => x.cpu.toFixed(2)).join(" ")}`,
  );
  console.log(`load average: ${load}${isSmoke ? " (smoke: the figures mean nothing)" : ""}`);
} finally {
  await store.close();
  server.stop();
}
process.exit(0);
