#!/usr/bin/env bun
/**
 * `npm run bench:ceiling`: the single-process ceiling of `tapscope run`: the most requests/s one traced program gets
 * with 1 and with 2 relay threads (`--relay-threads`), the server (bench/capture/server-cluster.js, several processes)
 * and wrk on the other cores; side by side in one run with the server alone and with haproxy mode tcp at 1 and 2
 * threads (the floor of a user-space relay). Modes alternate order each round so machine noise hits all of them.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --conns N (default 64), --size BYTES (default 1),
 *          --server-workers N (default: cores minus 3, at least 1), --json <file> to keep the raw figures,
 *          --smoke (one round of 1 s at 16 connections, no warm-up: proves it runs, measures nothing).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isSmoke, optionOf } from "../options.ts";
import { cpuNanos, haproxyTcpConfig, median, stopMeasured, waitForPort } from "./measure.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "5", "1"));
const conns = Number(option("conns", "64", "16"));
const size = Number(option("size", "1"));
const cores = availableParallelism();
const serverWorkers = Number(option("server-workers", String(Math.max(1, cores - 3))));
const jsonOut = option("json", "");
/** Two relay threads, two for wrk, two for the server: fewer, and the machine is the ceiling, not the relay. */
const CORES_NEEDED = 6;

if (spawnSync("wrk", ["--version"]).error) {
  console.error("bench:ceiling needs wrk (Debian: apt-get install wrk)");
  process.exit(1);
}
const hasHaproxy = !spawnSync("haproxy", ["-v"]).error;
if (!hasHaproxy) console.error("haproxy is not installed: the floor is left out (Debian: apt-get install haproxy)");

type Mode = "direct" | "tapscope x1" | "tapscope x2" | "haproxy x1" | "haproxy x2";
const modes: Mode[] = ["direct", "tapscope x1", "tapscope x2", ...(hasHaproxy ? (["haproxy x1", "haproxy x2"] as Mode[]) : [])];
type Sample = { rps: number; cpu: number };
const samples = new Map<Mode, Sample[]>();
let nextPort = 21_000 + Math.floor(Math.random() * 1000);

async function measure(mode: Mode): Promise<void> {
  const port = nextPort++;
  const isHaproxy = mode.startsWith("haproxy");
  const appPort = isHaproxy ? nextPort++ : port;
  const server = ["node", join(import.meta.dir, "server-cluster.js"), String(appPort), String(size), String(serverWorkers)];
  const threads = mode.endsWith("x2") ? 2 : 1;
  const command = mode.startsWith("tapscope")
    ? [process.execPath, join(root, "src/main.ts"), "run", "--no-publish", "--relay-threads", String(threads), "--", ...server]
    : server;
  const child = spawn(command[0]!, command.slice(1), { stdio: ["ignore", "ignore", "inherit"] });
  let relay: ReturnType<typeof spawn> | null = null;
  if (isHaproxy) {
    const file = join(mkdtempSync(join(tmpdir(), "bench-ceiling-haproxy-")), "haproxy.cfg");
    writeFileSync(file, haproxyTcpConfig(`127.0.0.1:${port}`, `127.0.0.1:${appPort}`, threads));
    relay = spawn("haproxy", ["-db", "-f", file], { stdio: "ignore" });
  }
  const measured = relay ?? child;
  try {
    await waitForPort(appPort);
    await waitForPort(port);
    if (!isSmoke) spawnSync("wrk", ["-t2", "-c16", "-d1s", `http://127.0.0.1:${port}/`]);
    const cpuBefore = mode === "direct" ? 0 : cpuNanos(measured.pid!);
    const res = spawnSync("wrk", ["-t2", `-c${conns}`, `-d${duration}s`, `http://127.0.0.1:${port}/`], { encoding: "utf8" });
    const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(res.stdout)?.[1]);
    const requests = Number(/(\d+) requests in/.exec(res.stdout)?.[1] ?? 0);
    const cpu = mode !== "direct" && requests > 0 ? (cpuNanos(measured.pid!) - cpuBefore) / 1000 / requests : 0;
    samples.set(mode, [...(samples.get(mode) ?? []), { rps, cpu }]);
    process.stderr.write(`  ${mode.padEnd(12)} ${rps.toFixed(0).padStart(7)} req/s${cpu ? `  relay CPU ${cpu.toFixed(1)}µs/req` : ""}\n`);
  } finally {
    await stopMeasured(relay, child);
  }
}

for (let round = 1; round <= rounds; round++) {
  process.stderr.write(`round ${round}/${rounds}\n`);
  for (const mode of round % 2 ? modes : [...modes].reverse()) await measure(mode);
}

const rps = (mode: Mode) => median((samples.get(mode) ?? []).map((s) => s.rps));
const cpu = (mode: Mode) => median((samples.get(mode) ?? []).map((s) => s.cpu));
console.log(
  `\nsingle-process ceiling: median of ${rounds} alternated runs of ${duration}s, wrk -t2 -c${conns}, ${size} B responses, ` +
    `server in ${serverWorkers} processes, ${cores} CPUs`,
);
if (cores < CORES_NEEDED) {
  console.log(
    `this machine has ${cores} cores; the ceiling of 2 relay threads needs at least ${CORES_NEEDED} (2 relay threads, 2 for wrk, ` +
      "2 for the server): below, the machine is the ceiling, not the relay",
  );
}
console.log("\nmode          req/s    vs direct  relay CPU/req");
for (const mode of modes) {
  console.log(
    [
      mode.padEnd(12),
      rps(mode).toFixed(0).padStart(7),
      (rps(mode) / rps("direct")).toFixed(2).padStart(9),
      (mode === "direct" ? "" : `${cpu(mode).toFixed(1)}µs`).padStart(14),
    ].join("  "),
  );
}
console.log(`\n2 relay threads / 1: ${(rps("tapscope x2") / rps("tapscope x1")).toFixed(2)}x requests/s`);
if (hasHaproxy)
  console.log(`haproxy 2 threads / 1: ${(rps("haproxy x2") / rps("haproxy x1")).toFixed(2)}x requests/s (the floor's own scaling)`);
if (jsonOut)
  writeFileSync(jsonOut, `${JSON.stringify({ rounds, duration, conns, size, cores, samples: Object.fromEntries(samples) }, null, 2)}\n`);
