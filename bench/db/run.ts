#!/usr/bin/env bun
/**
 * `npm run bench:db`: what reading a program's database calls costs. pgbench `-S` (select-only, one query per
 * transaction) against a real PostgreSQL and redis-benchmark (GET and SET, one at a time and pipelined 16 deep)
 * against a real Redis, each run four ways, alternated in one run so machine noise hits all of them:
 *   direct     the client talks to the database;
 *   haproxy    through haproxy mode tcp, one thread (the floor of any user-space relay; it reads nothing);
 *   traced     the client under `tapscope run --no-publish` (every statement parsed into an event);
 *   published  the client under `tapscope run`, publishing its events to a local server.
 * Prints per case the rate, p50 latency per query and what each way adds to it, and the relay's CPU per query
 * (tapscope's process, all threads, or haproxy's). Targets: added p50 within haproxy's + 15 µs; relay CPU per query
 * within 1.5x haproxy's.
 *
 * Options: --rounds N (default 3), --duration S (pgbench seconds, default 4), --requests N (redis-benchmark requests
 * per test, default 100000), --tapscope "<command>" (default: bun src/main.ts), --only TEXT, --smoke (one round, tiny
 * sizes: proves it runs, measures nothing).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { dbPassword, startPostgres, startRedisServer } from "../../tests/support/databases.ts";
import { spawnServer } from "../../tests/support/server-process.ts";
import { cpuNanos, haproxyTcpConfig, median, tapscopePids, waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "4", "1"));
const requests = Number(option("requests", "100000", "2000"));
const tapscope = option("tapscope", `${process.execPath} ${join(root, "src/main.ts")}`).split(" ");

for (const [tool, pkg] of [
  ["pgbench", "postgresql"],
  ["redis-benchmark", "redis-server"],
]) {
  if (spawnSync(tool!, ["--version"]).error) {
    console.error(`bench:db needs ${tool} (Debian: apt-get install ${pkg})`);
    process.exit(1);
  }
}

type Case = { name: string; kind: "pgbench" | "redis"; conns: number; pipeline: number };
const allCases: Case[] = [
  { name: "pgbench -S", kind: "pgbench", conns: 1, pipeline: 1 },
  { name: "pgbench -S", kind: "pgbench", conns: 8, pipeline: 1 },
  { name: "redis GET/SET", kind: "redis", conns: 1, pipeline: 1 },
  { name: "redis GET/SET", kind: "redis", conns: 16, pipeline: 1 },
  { name: "redis GET/SET -P16", kind: "redis", conns: 16, pipeline: 16 },
];
const cases = allCases.filter((c) => `${c.name} c=${c.conns}`.includes(option("only", "")) && (!isSmoke || c.conns > 1));
type Mode = "direct" | "haproxy" | "traced" | "published";
/** rate: queries per second; p50: µs per query; cpu: the relay's CPU µs per query (0 for direct). */
type Sample = { rate: number; p50: number; cpu: number };
const samples = new Map<string, Sample[]>();
const key = (mode: Mode, c: Case) => `${mode}/${c.name}/${c.conns}`;

const hasHaproxy = !spawnSync("haproxy", ["-v"]).error;
if (!hasHaproxy) console.error("haproxy is not installed: the floor is left out (Debian: apt-get install haproxy)");
const modes: Mode[] = ["direct", ...(hasHaproxy ? (["haproxy"] as Mode[]) : []), "traced", "published"];

const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-db-"));
const [pg, redis] = await Promise.all([startPostgres(), startRedisServer()]);
const eventServer = await spawnServer({ env: { LOG_LEVEL: "warn" } });
const env = { ...process.env, PGPASSWORD: dbPassword, PGSSLMODE: "disable", TAPSCOPE_ENDPOINT: eventServer.endpoint, TAPSCOPE_TOKEN: "" };
const init = spawnSync("pgbench", ["-i", "-q", "-s", "1", "-h", "127.0.0.1", "-p", String(pg.port), "-U", "app", "shop"], { env });
if (init.status !== 0) throw new Error(`pgbench -i failed: ${init.stderr}`);

/** haproxy mode tcp in front of `port`, on a port of its own. */
async function startHaproxy(name: string, port: number): Promise<{ port: number; proc: ChildProcess }> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const floorPort = probe.port;
  probe.stop(true);
  const config = join(dir, `${name}.cfg`);
  writeFileSync(config, haproxyTcpConfig(`127.0.0.1:${floorPort}`, `127.0.0.1:${port}`));
  const proc = spawn("haproxy", ["-db", "-f", config], { stdio: "ignore" });
  await waitForPort(floorPort);
  return { port: floorPort, proc };
}
const floors = hasHaproxy ? { pgbench: await startHaproxy("pg", pg.port), redis: await startHaproxy("redis", redis.port) } : null;

function clientArgs(c: Case, port: number, logPrefix: string): string[] {
  if (c.kind === "pgbench") {
    return [
      "pgbench",
      "-S",
      "-n",
      "-c",
      String(c.conns),
      "-j",
      "1",
      "-T",
      String(duration),
      "-l",
      "--log-prefix",
      logPrefix,
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-U",
      "app",
      "shop",
    ];
  }
  return [
    "redis-benchmark",
    "-h",
    "127.0.0.1",
    "-p",
    String(port),
    "-a",
    dbPassword,
    "-t",
    "get,set",
    "-n",
    String(requests),
    "-c",
    String(c.conns),
    "-P",
    String(c.pipeline),
    "--csv",
  ];
}

/** pgbench's per-transaction log: the third column is the transaction's latency in µs. */
function pgbenchP50(prefix: string): number {
  const latencies: number[] = [];
  const folder = join(prefix, "..");
  for (const file of readdirSync(folder).filter((f) => join(folder, f).startsWith(prefix))) {
    for (const line of readFileSync(join(folder, file), "utf8").split("\n")) {
      const value = Number(line.split(" ")[2]);
      if (line && Number.isFinite(value)) latencies.push(value);
    }
    rmSync(join(folder, file));
  }
  return median(latencies);
}

let runs = 0;
async function run(mode: Mode, c: Case): Promise<Sample> {
  const target = mode === "haproxy" ? floors![c.kind].port : c.kind === "pgbench" ? pg.port : redis.port;
  const logPrefix = join(dir, `pgbench-${++runs}`);
  const client = clientArgs(c, target, logPrefix);
  const command =
    mode === "traced"
      ? [...tapscope, "run", "--no-publish", "--", ...client]
      : mode === "published"
        ? [...tapscope, "run", "--", ...client]
        : client;
  const child = spawn(command[0]!, command.slice(1), { env });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  // The relay's CPU while the client runs: haproxy's over the run; tapscope's (the client is its child, with CPU of
  // its own) sampled every 50 ms from half a second in (start-up left out; a smoke run is too short for that) to the
  // last sample taken while its supervisor still runs (the front alone, once that exits, would read as less CPU).
  const floor = mode === "haproxy" ? floors![c.kind].proc : null;
  const floorBefore = floor ? cpuNanos(floor.pid!) : 0;
  const startedAt = performance.now();
  type Point = { at: number; cpu: number };
  const window: { first: Point | null; last: Point | null } = { first: null, last: null };
  const sampler = setInterval(() => {
    if (mode !== "traced" && mode !== "published") return;
    const at = performance.now();
    if (tapscopePids(child.pid!).length < 2) return;
    const cpu = cpuNanos(child.pid!);
    if (at - startedAt >= (isSmoke ? 0 : 500)) window.first ??= { at, cpu };
    window.last = { at, cpu };
  }, 50);
  const code = await new Promise<number | null>((done) => child.once("exit", done));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`${mode} ${c.name} exited ${code}:\n${out}\n${err}`);
  let rate: number;
  let p50: number;
  let queries: number;
  if (c.kind === "pgbench") {
    rate = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
    p50 = pgbenchP50(logPrefix);
    queries = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? 0);
  } else {
    // "GET","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...: the two tests' rates and p50s averaged.
    const rows = out
      .split("\n")
      .filter((line) => /^"(GET|SET)"/.test(line))
      .map((line) => line.split(",").map((cell) => cell.replaceAll('"', "")));
    if (rows.length !== 2) throw new Error(`redis-benchmark printed no figures (${mode}):\n${out}\n${err}`);
    rate = (Number(rows[0]![1]) + Number(rows[1]![1])) / 2;
    p50 = ((Number(rows[0]![4]) + Number(rows[1]![4])) / 2) * 1000;
    queries = requests * 2;
  }
  if (!rate || !Number.isFinite(p50)) throw new Error(`no figures (${mode}, ${c.name}):\n${out}\n${err}`);
  let cpu = 0;
  if (floor && queries > 0) cpu = (cpuNanos(floor.pid!) - floorBefore) / 1000 / queries;
  const { first, last } = window;
  if (first && last && last.at > first.at) cpu = (last.cpu - first.cpu) / 1000 / (rate * ((last.at - first.at) / 1000));
  else if (mode === "traced" || mode === "published") cpu = Number.NaN;
  return { rate, p50, cpu };
}

try {
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`round ${round}/${rounds}\n`);
    for (const c of cases) {
      for (const mode of round % 2 ? modes : [...modes].reverse()) {
        const sample = await run(mode, c);
        samples.set(key(mode, c), [...(samples.get(key(mode, c)) ?? []), sample]);
        process.stderr.write(
          `  ${mode.padEnd(9)} ${c.name.padEnd(18)} c=${String(c.conns).padStart(2)}  ${sample.rate.toFixed(0).padStart(7)}/s  p50 ${sample.p50.toFixed(0)}µs${sample.cpu ? `  relay CPU ${sample.cpu.toFixed(1)}µs/query` : ""}\n`,
        );
      }
    }
  }
} finally {
  floors?.pgbench.proc.kill("SIGTERM");
  floors?.redis.proc.kill("SIGTERM");
  pg.stop();
  redis.stop();
  await eventServer.kill();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\nDatabase call capture: median of ${rounds} alternated runs (${navigator.hardwareConcurrency} CPUs)`);
console.log("case                conns  mode       queries/s  p50 µs  added p50  relay CPU µs/query");
const med = (mode: Mode, c: Case, pick: (s: Sample) => number) => median((samples.get(key(mode, c)) ?? []).map(pick));
for (const c of cases) {
  for (const mode of modes) {
    const added =
      mode === "direct"
        ? ""
        : `${med(mode, c, (s) => s.p50) - med("direct", c, (s) => s.p50) >= 0 ? "+" : ""}${(med(mode, c, (s) => s.p50) - med("direct", c, (s) => s.p50)).toFixed(0)}`;
    console.log(
      [
        c.name.padEnd(18),
        String(c.conns).padStart(5),
        ` ${mode.padEnd(9)}`,
        med(mode, c, (s) => s.rate)
          .toFixed(0)
          .padStart(10),
        med(mode, c, (s) => s.p50)
          .toFixed(0)
          .padStart(6),
        added.padStart(9),
        mode === "direct"
          ? ""
          : med(mode, c, (s) => s.cpu)
              .toFixed(1)
              .padStart(18),
      ].join("  "),
    );
  }
}
if (hasHaproxy) {
  console.log("\nagainst the floor (targets: added p50 within haproxy's + 15 µs; relay CPU per query within 1.5x haproxy's):");
  for (const c of cases) {
    const added = (mode: Mode) => med(mode, c, (s) => s.p50) - med("direct", c, (s) => s.p50);
    const cpuRatio = med("traced", c, (s) => s.cpu) / med("haproxy", c, (s) => s.cpu);
    console.log(
      `  ${c.name} c=${c.conns}: added p50 traced ${added("traced").toFixed(0)} µs, haproxy ${added("haproxy").toFixed(0)} µs (over by ${(added("traced") - added("haproxy")).toFixed(0)} µs); relay CPU traced/haproxy ${cpuRatio.toFixed(2)}, publishing adds ${(med("published", c, (s) => s.cpu) - med("traced", c, (s) => s.cpu)).toFixed(1)} µs/query`,
    );
  }
}
