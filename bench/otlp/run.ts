/**
 * bench:otlp: what OTLP trace export costs the server at 5,000 events/s, side by side with export off.
 *
 *   npm run bench:otlp [-- --rate 5000 --seconds 10 --rounds 3]
 *   --smoke: 500 events/s for 1 s, one round (proves it runs, measures nothing).
 *
 * One server runtime per case (createRuntime, as `tapscope server` makes it; PGlite in memory, no event store, so the
 * figure is the export's and the live hub's alone), fed through ingest as publishers' messages are (batches of 100
 * every 20 ms), alternating off and on in each round. The collector is a stand-in in its own process (bench/otlp/
 * collector.ts) decoding with the official definitions. Per case: this process's CPU per event over the run, the
 * event loop's lag (how late a 10 ms timer fires: what a publisher's ack or a viewer would wait), and the spans the
 * collector decoded.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { namespaces, orgs } from "#db/schema/index.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { benchEvent } from "../live/events.ts";
import { isSmoke, optionOf } from "../options.ts";

setLogSink(() => {});
const option = optionOf(process.argv.slice(2));
const rate = Number(option("rate", "5000", "500"));
const seconds = Number(option("seconds", "10", "1"));
const rounds = Number(option("rounds", "3", "1"));
const batch = 100;

type Collector = { url: string; count: () => Promise<number>; stop: () => void };

async function startCollector(): Promise<Collector> {
  const child = spawn(process.execPath, [join(import.meta.dir, "collector.ts")], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve) => {
    child.stdout.once("data", (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).port));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    count: async () => ((await (await fetch(url)).json()) as { spans: number }).spans,
    stop: () => child.kill(),
  };
}

/** Traffic as a traced service makes it: an inbound request, then (one in five) an outbound call made under the one before. */
function events(from: number, count: number, nowUs: number): TracedEvent[] {
  const out: TracedEvent[] = [];
  for (let i = from; i < from + count; i++) {
    const e = benchEvent(i, nowUs);
    if (e.http_is_outgoing) e.parent_event_id = benchEvent(i - 1, nowUs).event_id;
    if (i % 10 === 3)
      e.http_req_headers = [...e.http_req_headers, ["traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]];
    out.push(e);
  }
  return out;
}

type Result = { cpuUsPerEvent: number; lagP99Ms: number; lagMaxMs: number; spans: number; accepted: number };

async function runCase(collector: Collector | null, round: number): Promise<Result> {
  const exportTo = collector?.url ?? null;
  const database = await openDatabase({});
  const config = parseConfig({
    DATA_DIR: `/tmp/tapscope-bench-otlp-${process.pid}`,
    SESSION_SECRET: "bench-session-secret-0123456789",
    ...(exportTo ? { OTEL_EXPORTER_OTLP_ENDPOINT: exportTo } : {}),
  });
  const runtime = createRuntime({ config, db: database.db });
  const [org] = await database.db
    .insert(orgs)
    .values({ name: `bench-${round}` })
    .returning();
  const [namespace] = await database.db
    .insert(namespaces)
    .values({ orgId: org?.id ?? "", name: `bench-${round}` })
    .returning();
  const namespaceId = namespace?.id ?? "";
  const target = { namespaceId, linkId: null };
  const total = rate * seconds;
  const intervalMs = (batch / rate) * 1000;
  // Warm-up: the exporter reads the namespace's settings, the JIT settles.
  runtime.ingest.handle(target, { type: "events", seq: 0, events: events(0, batch, Date.now() * 1000) });
  await runtime.otlp.flush();
  await Bun.sleep(200);
  const spansBefore = (await collector?.count()) ?? 0;

  const lags: number[] = [];
  let lagTimer: ReturnType<typeof setTimeout> | null = null;
  const sampleLag = () => {
    const at = performance.now();
    lagTimer = setTimeout(() => {
      lags.push(performance.now() - at - 10);
      sampleLag();
    }, 10);
  };
  sampleLag();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let accepted = 0;
  for (let sent = 0, seq = 1; sent < total; sent += batch, seq++) {
    const reply = runtime.ingest.handle(target, { type: "events", seq, events: events(batch + sent, batch, Date.now() * 1000) });
    if (reply.type === "ack") accepted += reply.accepted;
    const wait = t0 + seq * intervalMs - performance.now();
    if (wait > 0) await Bun.sleep(wait);
  }
  // What the exporter still holds is part of its cost: sent before the clock stops.
  await runtime.otlp.flush();
  const cpu = process.cpuUsage(cpu0);
  if (lagTimer) clearTimeout(lagTimer);
  const spans = ((await collector?.count()) ?? 0) - spansBefore;
  await runtime.close();
  await database.close();
  lags.sort((a, b) => a - b);
  return {
    cpuUsPerEvent: (cpu.user + cpu.system) / total,
    lagP99Ms: lags[Math.floor(lags.length * 0.99)] ?? 0,
    lagMaxMs: lags.at(-1) ?? 0,
    spans,
    accepted,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

const collector = await startCollector();
const off: Result[] = [];
const on: Result[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    off.push(await runCase(null, round * 2));
    on.push(await runCase(collector, round * 2 + 1));
  }
} finally {
  collector.stop();
}

const row = (name: string, rs: Result[]) =>
  `| ${name} | ${rate} | ${median(rs.map((r) => r.cpuUsPerEvent)).toFixed(1)} | ${median(rs.map((r) => r.lagP99Ms)).toFixed(2)} | ${median(rs.map((r) => r.lagMaxMs)).toFixed(1)} | ${median(rs.map((r) => r.accepted))} | ${median(rs.map((r) => r.spans))} |`;
console.log(`OTLP export at ${rate} events/s for ${seconds} s, median of ${rounds} alternated round(s)${isSmoke ? " (smoke)" : ""}`);
console.log("| case | events/s | CPU µs per event | loop lag p99 (ms) | loop lag max (ms) | accepted | spans at collector |");
console.log("|---|---|---|---|---|---|---|");
console.log(row("export off", off));
console.log(row("export on", on));
const cpuOff = median(off.map((r) => r.cpuUsPerEvent));
const cpuOn = median(on.map((r) => r.cpuUsPerEvent));
console.log(
  `export on / off: CPU ${(cpuOn / cpuOff).toFixed(2)}x (${cpuOn >= cpuOff ? "+" : ""}${(cpuOn - cpuOff).toFixed(1)} µs per event), ${median(on.map((r) => r.spans))} of ${rate * seconds} spans delivered`,
);
