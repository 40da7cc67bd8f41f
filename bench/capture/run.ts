#!/usr/bin/env bun
/**
 * `npm run bench:capture`: the cost of `tapscope run` on a minimal HTTP server (bench/capture/server.js),
 * measured with wrk, direct and traced, alternated several times in one run so machine noise hits both.
 * Prints requests/s traced/direct and the added p50/p99 latency at 1 and 16 connections, 1 B and 64 KiB,
 * for the relay alone (relay-only.ts: interception and relay, no parsing) and for full `tapscope run`.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --server <file.js> (default server.js),
 *          --tapscope "<command>" (default: bun src/main.ts), --json <file> to keep the raw figures.
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const rounds = Number(option("rounds", "3"));
const duration = Number(option("duration", "5"));
const serverFile = resolve(option("server", join(import.meta.dir, "server.js")));
const tapscope = option("tapscope", `${process.execPath} ${join(root, "src/main.ts")}`).split(" ");
const jsonOut = option("json", "");

if (spawnSync("wrk", ["--version"]).error) {
  console.error("bench:capture needs wrk (Debian: apt-get install wrk)");
  process.exit(1);
}

type Sample = { rps: number; p50: number; p99: number };
/** direct: the server alone; relay: under interception with the relay only (no parsing); traced: `tapscope run`. */
type Mode = "direct" | "relay" | "traced";
const sizes = [1, 64 * 1024];
const connections = [1, 16];
const samples = new Map<string, Sample[]>();
const key = (mode: Mode, size: number, conns: number) => `${mode}/${size}/${conns}`;

function micros(text: string): number {
  const m = /([\d.]+)(us|ms|s)\b/.exec(text);
  if (!m) return Number.NaN;
  const value = Number(m[1]);
  return m[2] === "us" ? value : m[2] === "ms" ? value * 1000 : value * 1_000_000;
}

function parseWrk(output: string): Sample {
  const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(output)?.[1]);
  const p50 = micros(/^\s*50%\s+(\S+)/m.exec(output)?.[1] ?? "");
  const p99 = micros(/^\s*99%\s+(\S+)/m.exec(output)?.[1] ?? "");
  return { rps, p50, p99 };
}

async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((done) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        done(true);
      });
      socket.once("error", () => done(false));
    });
    if (ok) return;
    await Bun.sleep(50);
  }
  throw new Error(`server on port ${port} did not start`);
}

let nextPort = 19_000 + Math.floor(Math.random() * 1000);

async function measure(mode: Mode, size: number): Promise<void> {
  const port = nextPort++;
  const server = ["node", serverFile, String(port), String(size)];
  const command =
    mode === "direct"
      ? server
      : mode === "relay"
        ? [process.execPath, join(import.meta.dir, "relay-only.ts"), "--", ...server]
        : [...tapscope, "run", "--no-publish", "--", ...server];
  const child = spawn(command[0]!, command.slice(1), { stdio: ["ignore", "ignore", "inherit"] });
  try {
    await waitForPort(port);
    // Warm up (JIT, connection setup) before measuring.
    spawnSync("wrk", ["-t1", "-c4", "-d1s", `http://127.0.0.1:${port}/`]);
    for (const conns of connections) {
      const threads = Math.min(2, conns);
      const res = spawnSync("wrk", [`-t${threads}`, `-c${conns}`, `-d${duration}s`, "--latency", `http://127.0.0.1:${port}/`], {
        encoding: "utf8",
      });
      const sample = parseWrk(res.stdout);
      const list = samples.get(key(mode, size, conns)) ?? [];
      list.push(sample);
      samples.set(key(mode, size, conns), list);
      process.stderr.write(
        `  ${mode.padEnd(6)} ${String(size).padStart(5)} B  c=${String(conns).padStart(2)}  ${sample.rps.toFixed(0).padStart(6)} req/s  p50 ${sample.p50}µs  p99 ${sample.p99}µs\n`,
      );
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((done) => child.once("exit", done));
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

for (let round = 1; round <= rounds; round++) {
  process.stderr.write(`round ${round}/${rounds}\n`);
  for (const size of sizes) {
    // Alternate which mode goes first so warm caches and neighbours do not favour one.
    const order: Mode[] = round % 2 ? ["direct", "relay", "traced"] : ["traced", "relay", "direct"];
    for (const mode of order) await measure(mode, size);
  }
}

const rows: Record<string, number | string>[] = [];
console.log(`\ncapture overhead: median of ${rounds} alternated runs of ${duration}s each (wrk, ${navigator.hardwareConcurrency} CPUs)`);
console.log("relay = intercepted and relayed, no parsing; traced = tapscope run (relay + HTTP parsing + events)\n");
console.log("response  conns  mode    req/s    vs direct  p50      added p50  p99       added p99");
const med = (list: Sample[], pick: (s: Sample) => number) => median(list.map(pick));
for (const size of sizes) {
  for (const conns of connections) {
    const direct = samples.get(key("direct", size, conns)) ?? [];
    for (const mode of ["direct", "relay", "traced"] as const) {
      const list = samples.get(key(mode, size, conns)) ?? [];
      const row = {
        response: size === 1 ? "1 B" : "64 KiB",
        conns,
        mode,
        rps: med(list, (s) => s.rps),
        ratio: med(list, (s) => s.rps) / med(direct, (s) => s.rps),
        p50: med(list, (s) => s.p50),
        addedP50: med(list, (s) => s.p50) - med(direct, (s) => s.p50),
        p99: med(list, (s) => s.p99),
        addedP99: med(list, (s) => s.p99) - med(direct, (s) => s.p99),
      };
      rows.push(row);
      const signed = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(0)}µs`;
      console.log(
        [
          row.response.padEnd(8),
          String(conns).padStart(5),
          mode.padEnd(6),
          row.rps.toFixed(0).padStart(7),
          row.ratio.toFixed(2).padStart(9),
          `${row.p50.toFixed(0)}µs`.padStart(7),
          (mode === "direct" ? "" : signed(row.addedP50)).padStart(9),
          `${row.p99.toFixed(0)}µs`.padStart(8),
          (mode === "direct" ? "" : signed(row.addedP99)).padStart(9),
        ].join("  "),
      );
    }
  }
}
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify({ rounds, duration, rows, samples: Object.fromEntries(samples) }, null, 2)}\n`);
