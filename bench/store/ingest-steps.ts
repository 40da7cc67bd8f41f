import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { optionOf } from "../options.ts";
import { publishThrough } from "./server.ts";

/**
 * What ingest's own steps cost end to end: the same events published through the real publisher process into a fresh
 * DuckDB store, with the server making the content-search fields and the routes (as it does), with only one of them,
 * and with neither (what ingest was before them), alternated in one run so the machine's load hits all alike.
 *   bun bench/store/ingest-steps.ts [--rows 200000] [--rounds 3] [--rate 20000] [--smoke]
 * The figure is events stored per CPU-second of the server process (its whole path: WebSocket, validation, the
 * steps, the store sink, DuckDB), the median of the rounds, and each as a ratio of "neither".
 */
const arg = optionOf(process.argv.slice(2));
const rows = Number(arg("rows", "200000", "2000"));
const rounds = Number(arg("rounds", "3", "1"));
/** Events per second the publisher offers: a sustained load the store takes whole (0: as fast as it can, and what the store cannot take is dropped, costing CPU without counting). */
const rate = Number(arg("rate", "20000"));

const hourMs = 3_600_000;
const endMs = Math.floor(Date.now() / hourMs) * hourMs;
const startMs = endMs - 24 * hourMs;

const configs = [
  { name: "neither (before search fields and routes)", steps: { searchTexts: false, routes: false } },
  { name: "routes only", steps: { searchTexts: false, routes: true } },
  { name: "search fields only", steps: { searchTexts: true, routes: false } },
  { name: "both (what the server does)", steps: { searchTexts: true, routes: true } },
] as const;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

const perCpu = new Map<string, number[]>(configs.map((c) => [c.name, []]));
const dropped = new Map<string, number>(configs.map((c) => [c.name, 0]));
console.log(`ingest steps: ${rows} events per run, ${rounds} rounds, DuckDB, ${rate > 0 ? `offered ${rate}/s` : "unpaced"}`);
for (let round = 0; round < rounds; round++) {
  // Each round starts with another configuration, so none always runs first (or last) in the machine's load.
  const order = configs.map((_, i) => configs[(i + round) % configs.length]!);
  for (const c of order) {
    const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-steps-"));
    const store = await openDuckDbStore({ path: join(dir, "events.duckdb") });
    try {
      const r = await publishThrough(store, { rows, startMs, endMs, rate, ingestSteps: c.steps });
      const figure = r.stored / r.cpuSeconds;
      perCpu.get(c.name)!.push(figure);
      dropped.set(c.name, dropped.get(c.name)! + r.sinkDropped.overloaded + r.sinkDropped.store_error + r.publisherDropped);
      console.log(
        `  round ${round + 1} ${c.name.padEnd(42)} stored ${r.stored} in ${r.seconds.toFixed(1)} s, server CPU ${r.cpuSeconds.toFixed(1)} s => ${Math.round(figure)} events per server CPU-second`,
      );
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const base = median(perCpu.get(configs[0].name)!);
console.log(`\n| ingest (median of ${rounds}) | events per server CPU-second | / neither | dropped |`);
console.log("|---|---|---|---|");
for (const c of configs) {
  const m = median(perCpu.get(c.name)!);
  console.log(`| ${c.name} | ${Math.round(m)} | ${(m / base).toFixed(2)} | ${dropped.get(c.name)} |`);
}
