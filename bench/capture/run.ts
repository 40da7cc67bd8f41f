#!/usr/bin/env bun
/**
 * `npm run bench:capture`: the cost of `tapscope run` on a minimal HTTP server (bench/capture/server.js),
 * measured with wrk, direct and traced, alternated several times in one run so machine noise hits both.
 * Prints requests/s traced/direct and the added p50/p99 latency at 1 and 16 connections, 1 B and 64 KiB,
 * for the relay alone (relay-only.ts: interception and relay, no parsing) and for full `tapscope run`.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --server <file.js> (default server.js),
 *          --sizes 1,65536 and --conns 1,16 (what to measure), --baseline <checkout> (also measure that
 *          checkout's `tapscope run`, as modes "base" (--no-publish) and "base-pub" (publishing)),
 *          --tapscope "<command>" (default: bun src/main.ts), --json <file> to keep the raw figures,
 *          --smoke (one round of 1 s, 1 B at 16 connections, no warm-up: proves it runs, measures nothing).
 * Also, side by side: **haproxy** (mode tcp, one thread: the floor of a user-space relay, when Debian's haproxy is
 * installed; its CPU per request is printed like tapscope's) and **published** (`tapscope run` publishing its events
 * to a local `tapscope server`: what publishing adds to tapscope's own CPU per request, the server's not counted).
 * tapscope runs with one relay thread here (the cost per request); bench/capture/ceiling.ts measures 1 against 2.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnServer } from "../../tests/support/server-process.ts";
import { isSmoke, optionOf } from "../options.ts";
import { cpuNanos, haproxyTcpConfig, median, stopMeasured, waitForPort } from "./measure.ts";

const root = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const option = optionOf(args);
const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "5", "1"));
const serverFile = resolve(option("server", join(import.meta.dir, "server.js")));
const tapscope = option("tapscope", `${process.execPath} ${join(root, "src/main.ts")}`).split(" ");
const jsonOut = option("json", "");
/** Another checkout of tapscope (e.g. `git archive HEAD`): its `run` is measured too, as mode "base", to compare changes in one run. */
const baseline = option("baseline", "");

if (spawnSync("wrk", ["--version"]).error) {
  console.error("bench:capture needs wrk (Debian: apt-get install wrk)");
  process.exit(1);
}

/** cpu: the tapscope process's CPU time (all threads) per request in µs; 0 for direct. */
type Sample = { rps: number; p50: number; p99: number; cpu: number };
/**
 * direct: the server alone; relay: under interception with the relay only (no parsing); traced: `tapscope run
 * --no-publish`; published: `tapscope run` publishing to a local server; haproxy: the server behind haproxy mode tcp.
 */
type Mode = "direct" | "relay" | "traced" | "published" | "haproxy" | "base" | "base-pub";
const hasHaproxy = !spawnSync("haproxy", ["-v"]).error;
if (!hasHaproxy) console.error("haproxy is not installed: the C floor is left out (Debian: apt-get install haproxy)");
// The server the published mode's events go to (embedded default, its own data dir), up for the whole run.
const eventServer = await spawnServer({ env: { LOG_LEVEL: "warn", ANONYMOUS_LINKS_PER_HOUR: "0" } });
const allModes: Mode[] = [
  "direct",
  "relay",
  "traced",
  "published",
  ...(hasHaproxy ? (["haproxy"] as Mode[]) : []),
  ...(baseline ? (["base", "base-pub"] as Mode[]) : []),
];
const sizes = option("sizes", "1,65536", "1").split(",").map(Number);
const connections = option("conns", "1,16", "16").split(",").map(Number);
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
  return { rps, p50, p99, cpu: 0 };
}

let nextPort = 19_000 + Math.floor(Math.random() * 1000);

function haproxyConfig(port: number, backend: number): string {
  const file = join(mkdtempSync(join(tmpdir(), "bench-capture-haproxy-")), "haproxy.cfg");
  writeFileSync(file, haproxyTcpConfig(`127.0.0.1:${port}`, `127.0.0.1:${backend}`));
  return file;
}

async function measure(mode: Mode, size: number): Promise<void> {
  const port = nextPort++;
  // haproxy listens on `port` and relays to the app on the next port.
  const appPort = mode === "haproxy" ? nextPort++ : port;
  const server = ["node", serverFile, String(appPort), String(size)];
  const command =
    mode === "direct"
      ? server
      : mode === "relay"
        ? [process.execPath, join(import.meta.dir, "relay-only.ts"), "--", ...server]
        : mode === "base"
          ? [process.execPath, join(resolve(baseline), "src/main.ts"), "run", "--no-publish", "--relay-threads", "1", "--", ...server]
          : mode === "base-pub"
            ? [process.execPath, join(resolve(baseline), "src/main.ts"), "run", "--relay-threads", "1", "--", ...server]
            : mode === "published"
              ? [...tapscope, "run", "--relay-threads", "1", "--", ...server]
              : mode === "haproxy"
                ? server
                : [...tapscope, "run", "--no-publish", "--relay-threads", "1", "--", ...server];
  const child = spawn(command[0]!, command.slice(1), {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, TAPSCOPE_ENDPOINT: eventServer.endpoint, TAPSCOPE_TOKEN: "" },
  });
  const relay = mode === "haproxy" ? spawn("haproxy", ["-db", "-f", haproxyConfig(port, appPort)], { stdio: "ignore" }) : null;
  // Whose CPU is the relay's: tapscope's process, or haproxy's.
  const measured = relay ?? child;
  try {
    await waitForPort(appPort);
    await waitForPort(port);
    // Warm up (JIT, connection setup) before measuring.
    if (!isSmoke) spawnSync("wrk", ["-t1", "-c4", "-d1s", `http://127.0.0.1:${port}/`]);
    for (const conns of connections) {
      const threads = Math.min(2, conns);
      const cpuBefore = mode === "direct" ? 0 : cpuNanos(measured.pid!);
      const res = spawnSync("wrk", [`-t${threads}`, `-c${conns}`, `-d${duration}s`, "--latency", `http://127.0.0.1:${port}/`], {
        encoding: "utf8",
      });
      const sample = parseWrk(res.stdout);
      const requests = Number(/(\d+) requests in/.exec(res.stdout)?.[1] ?? 0);
      if (mode !== "direct" && requests > 0) sample.cpu = (cpuNanos(measured.pid!) - cpuBefore) / 1000 / requests;
      const list = samples.get(key(mode, size, conns)) ?? [];
      list.push(sample);
      samples.set(key(mode, size, conns), list);
      process.stderr.write(
        `  ${mode.padEnd(8)} ${String(size).padStart(5)} B  c=${String(conns).padStart(2)}  ${sample.rps.toFixed(0).padStart(6)} req/s  p50 ${sample.p50}µs  p99 ${sample.p99}µs${sample.cpu ? `  tapscope CPU ${sample.cpu.toFixed(1)}µs/req` : ""}\n`,
      );
    }
  } finally {
    await stopMeasured(relay, child);
  }
}

for (let round = 1; round <= rounds; round++) {
  process.stderr.write(`round ${round}/${rounds}\n`);
  for (const size of sizes) {
    // Alternate which mode goes first so warm caches and neighbours do not favour one.
    const order = round % 2 ? allModes : [...allModes].reverse();
    for (const mode of order) await measure(mode, size);
  }
}

const rows: Record<string, number | string>[] = [];
console.log(`\ncapture overhead: median of ${rounds} alternated runs of ${duration}s each (wrk, ${navigator.hardwareConcurrency} CPUs)`);
console.log("relay = intercepted and relayed, no parsing; traced = tapscope run --no-publish (relay + HTTP parsing + events);");
console.log("published = tapscope run publishing to a local server; haproxy = haproxy mode tcp, one thread (the floor)\n");
console.log("response  conns  mode    req/s    vs direct  p50      added p50  p99       added p99  tapscope CPU/req");
const med = (list: Sample[], pick: (s: Sample) => number) => median(list.map(pick));
for (const size of sizes) {
  for (const conns of connections) {
    const direct = samples.get(key("direct", size, conns)) ?? [];
    for (const mode of allModes) {
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
        cpu: med(list, (s) => s.cpu),
      };
      rows.push(row);
      const signed = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(0)}µs`;
      console.log(
        [
          row.response.padEnd(8),
          String(conns).padStart(5),
          mode.padEnd(8),
          row.rps.toFixed(0).padStart(7),
          row.ratio.toFixed(2).padStart(9),
          `${row.p50.toFixed(0)}µs`.padStart(7),
          (mode === "direct" ? "" : signed(row.addedP50)).padStart(9),
          `${row.p99.toFixed(0)}µs`.padStart(8),
          (mode === "direct" ? "" : signed(row.addedP99)).padStart(9),
          (mode === "direct" ? "" : `${row.cpu.toFixed(1)}µs`).padStart(16),
        ].join("  "),
      );
    }
  }
}
console.log("\nratios of CPU per request (tapscope / haproxy; target 1.2) and what publishing adds (published - traced; target 3 µs):");
for (const size of sizes) {
  for (const conns of connections) {
    const cpu = (mode: Mode) =>
      Number(rows.find((r) => r.mode === mode && r.conns === conns && r.response === (size === 1 ? "1 B" : "64 KiB"))?.cpu);
    const floor = hasHaproxy
      ? ` traced/haproxy ${(cpu("traced") / cpu("haproxy")).toFixed(2)}, published/haproxy ${(cpu("published") / cpu("haproxy")).toFixed(2)},`
      : "";
    const base = baseline
      ? `; base: traced/haproxy ${(cpu("base") / cpu("haproxy")).toFixed(2)}, published/haproxy ${(cpu("base-pub") / cpu("haproxy")).toFixed(2)}, publishing adds ${(cpu("base-pub") - cpu("base")).toFixed(1)} µs/req`
      : "";
    console.log(
      `  ${size === 1 ? "1 B" : "64 KiB"} c=${conns}:${floor} publishing adds ${(cpu("published") - cpu("traced")).toFixed(1)} µs/req${base}`,
    );
  }
}
await eventServer.kill();
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify({ rounds, duration, rows, samples: Object.fromEntries(samples) }, null, 2)}\n`);
