#!/usr/bin/env bun
/**
 * `npm run bench:tls`: what decrypting a program's outbound HTTPS costs. The program is wrk (OpenSSL) making HTTPS
 * requests to a local Bun HTTPS server, run direct and under `tapscope run` (TLS interception on), alternated in one
 * run so machine noise hits both. Keep-alive at 1 and 16 connections with 1 B and 64 KiB responses, and a new
 * connection per request (`Connection: close`: the TLS handshake, with the upstream handshake and the leaf for the
 * host already made, is in every request). Prints throughput traced/direct and the added p50/p99.
 *
 * The floor, side by side when HAProxy is installed (Debian: apt-get install haproxy): wrk through HAProxy doing what
 * the relay does to a connection, in C on OpenSSL: TLS terminated with a certificate from the run's kind of CA,
 * TLS to the server verified against the server's CA, server sessions reused (its default), one thread. HAProxy
 * is not intercepting anything (wrk dials it directly), so it is a lower bound on what a relay of this design
 * costs, not a rival tracer.
 *
 * Options: --rounds N (default 3), --duration S (default 4), --tapscope "<command>" (default: bun src/main.ts),
 * --only TEXT (the cases whose name contains it, e.g. --only new), --smoke (one round of 1 s of the 1 B cases at
 * 16 connections and new connections: proves it runs, measures nothing).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { makeCa, makeLeaf } from "../../tests/agent/tls-pki.ts";
import { cpuNanos, haproxyTcpConfig, median, waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "4", "1"));
const tapscope = option("tapscope", `${process.execPath} ${join(root, "src/main.ts")}`).split(" ");

if (spawnSync("wrk", ["--version"]).error) {
  console.error("bench:tls needs wrk (Debian: apt-get install wrk)");
  process.exit(1);
}

type Case = { name: string; size: number; conns: number; newConnection: boolean };
const allCases: Case[] = [
  { name: "keep-alive 1 B", size: 1, conns: 1, newConnection: false },
  { name: "keep-alive 1 B", size: 1, conns: 16, newConnection: false },
  { name: "keep-alive 64 KiB", size: 65536, conns: 1, newConnection: false },
  { name: "keep-alive 64 KiB", size: 65536, conns: 16, newConnection: false },
  { name: "new connection 1 B", size: 1, conns: 1, newConnection: true },
];
const cases = allCases.filter(
  (c) => c.name.includes(option("only", "")) && (!isSmoke || (c.size === 1 && (c.conns === 16 || c.newConnection))),
);
type Mode = "direct" | "traced" | "haproxy";
/** cpu: the relay's CPU time per request in µs (tapscope's process, all threads; or haproxy's), 0 for direct. */
type Sample = { rps: number; p50: number; p99: number; cpu: number };
const samples = new Map<string, Sample[]>();
const key = (mode: Mode, c: Case) => `${mode}/${c.name}/${c.conns}`;

const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-tls-"));
makeCa(dir, "ca");
const leaf = makeLeaf(dir, "ca", "server", ["DNS:localhost", "IP:127.0.0.1"]);
const caFile = join(dir, "ca.crt");
const relayLeaf = makeLeaf(dir, "ca", "relay", ["DNS:localhost", "IP:127.0.0.1"]);
const server = spawn(process.execPath, [join(import.meta.dir, "server.ts")], { stdio: ["pipe", "pipe", "inherit"] });
server.stdin.write(`${JSON.stringify(leaf)}\n`);
const port = await new Promise<number>((done) => {
  let out = "";
  server.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes("\n")) done((JSON.parse(out) as { port: number }).port);
  });
});

function micros(text: string): number {
  const m = /([\d.]+)(us|ms|s)\b/.exec(text);
  if (!m) return Number.NaN;
  const value = Number(m[1]);
  return m[2] === "us" ? value : m[2] === "ms" ? value * 1000 : value * 1_000_000;
}

let haproxy: ChildProcess | null = null;
const haproxyPort = await startHaproxy();
const modes: Mode[] = haproxyPort ? ["direct", "traced", "haproxy"] : ["direct", "traced"];

/** The C floor (see the header), listening on a port of its own; 0 when HAProxy is not installed. */
async function startHaproxy(): Promise<number> {
  if (spawnSync("haproxy", ["-v"]).error) {
    console.error("haproxy is not installed: the C floor is left out (Debian: apt-get install haproxy)");
    return 0;
  }
  writeFileSync(join(dir, "relay.pem"), relayLeaf.cert + relayLeaf.key);
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const floorPort = probe.port;
  probe.stop(true);
  // Mode http: it parses the requests and responses it relays, as the relay's tracer does.
  const config = haproxyTcpConfig(
    `127.0.0.1:${floorPort} ssl crt ${join(dir, "relay.pem")}`,
    `127.0.0.1:${port} ssl verify required ca-file ${caFile} sni str(localhost)`,
    1,
    "http",
  );
  writeFileSync(join(dir, "haproxy.cfg"), config);
  haproxy = spawn("haproxy", ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: "ignore" });
  await waitForPort(floorPort);
  return floorPort;
}

function wrkArgs(c: Case, seconds: number, to: number): string[] {
  const args = [`-t${Math.min(2, c.conns)}`, `-c${c.conns}`, `-d${seconds}s`, "--latency"];
  if (c.newConnection) args.push("-H", "Connection: close");
  return [...args, `https://127.0.0.1:${to}/${c.size}`];
}

async function run(mode: Mode, c: Case): Promise<Sample> {
  const wrk = ["wrk", ...wrkArgs(c, duration, mode === "haproxy" ? haproxyPort : port)];
  // The program trusts the server's CA the way a user says so; the run verifies the server against it.
  const command = mode === "traced" ? [...tapscope, "run", "--no-publish", "--relay-threads", "1", "--", ...wrk] : wrk;
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, SSL_CERT_FILE: caFile } });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  // The relay's CPU while wrk runs: haproxy's over the run; tapscope's (wrk is its child, with CPU of its own) from
  // schedstat sampled every 50 ms, from half a second in (start-up left out) to the last sample before it exits.
  const haproxyBefore = mode === "haproxy" && haproxy ? cpuNanos(haproxy.pid!) : 0;
  const startedAt = performance.now();
  type Point = { at: number; cpu: number };
  const window: { first: Point | null; last: Point | null } = { first: null, last: null };
  const sampler = setInterval(() => {
    if (mode !== "traced") return;
    const at = performance.now();
    const cpu = cpuNanos(child.pid!);
    if (cpu === 0) return;
    if (at - startedAt >= 500) window.first ??= { at, cpu };
    window.last = { at, cpu };
  }, 50);
  await new Promise((done) => child.once("exit", done));
  clearInterval(sampler);
  const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(out)?.[1]);
  if (!rps) throw new Error(`wrk printed no figures (${mode}, ${c.name}):\n${out}\n${err}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  let cpu = 0;
  if (mode === "haproxy" && haproxy && requests > 0) cpu = (cpuNanos(haproxy.pid!) - haproxyBefore) / 1000 / requests;
  const { first, last } = window;
  if (mode === "traced" && first && last && last.at > first.at) {
    cpu = (last.cpu - first.cpu) / 1000 / (rps * ((last.at - first.at) / 1000));
  }
  return { rps, p50: micros(/^\s*50%\s+(\S+)/m.exec(out)?.[1] ?? ""), p99: micros(/^\s*99%\s+(\S+)/m.exec(out)?.[1] ?? ""), cpu };
}

try {
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`round ${round}/${rounds}\n`);
    for (const c of cases) {
      for (const mode of round % 2 ? modes : [...modes].reverse()) {
        const sample = await run(mode, c);
        const list = samples.get(key(mode, c)) ?? [];
        list.push(sample);
        samples.set(key(mode, c), list);
        process.stderr.write(
          `  ${mode.padEnd(6)} ${c.name.padEnd(19)} c=${String(c.conns).padStart(2)}  ${sample.rps.toFixed(0).padStart(6)} req/s  p50 ${sample.p50}µs  p99 ${sample.p99}µs${sample.cpu ? `  relay CPU ${sample.cpu.toFixed(1)}µs/req` : ""}\n`,
        );
      }
    }
  }
} finally {
  server.kill("SIGTERM");
  (haproxy as ChildProcess | null)?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `\nHTTPS capture overhead: median of ${rounds} alternated runs of ${duration}s each (wrk over TLS, ${navigator.hardwareConcurrency} CPUs)`,
);
const floor = modes.includes("haproxy");
console.log(
  `case                 conns  direct req/s  traced req/s  traced/direct  added p50   added p99${floor ? "  haproxy/direct  haproxy added p50" : ""}`,
);
for (const c of cases) {
  const med = (mode: Mode, pick: (s: Sample) => number) => median((samples.get(key(mode, c)) ?? []).map(pick));
  const signed = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(0)}µs`;
  const ratio = (mode: Mode) => (med(mode, (s) => s.rps) / med("direct", (s) => s.rps)).toFixed(2);
  const added = (mode: Mode, pick: (s: Sample) => number) => signed(med(mode, pick) - med("direct", pick));
  console.log(
    [
      c.name.padEnd(19),
      String(c.conns).padStart(5),
      med("direct", (s) => s.rps)
        .toFixed(0)
        .padStart(12),
      med("traced", (s) => s.rps)
        .toFixed(0)
        .padStart(12),
      ratio("traced").padStart(13),
      added("traced", (s) => s.p50).padStart(10),
      added("traced", (s) => s.p99).padStart(10),
      ...(floor ? [ratio("haproxy").padStart(14), added("haproxy", (s) => s.p50).padStart(17)] : []),
    ].join("  "),
  );
}
if (floor) {
  console.log("\nrelay CPU per request (tapscope's process, all threads, against haproxy mode http doing both TLS legs; target 1.3):");
  for (const c of cases) {
    const cpu = (mode: Mode) => median((samples.get(key(mode, c)) ?? []).map((s) => s.cpu));
    console.log(
      `  ${c.name} c=${c.conns}: tapscope ${cpu("traced").toFixed(1)}µs, haproxy ${cpu("haproxy").toFixed(1)}µs, ratio ${(cpu("traced") / cpu("haproxy")).toFixed(2)}`,
    );
  }
}
// wrk's latency starts after the connection is made: a new connection's handshake shows in its rate, one at a time.
for (const c of cases.filter((x) => x.newConnection && x.conns === 1)) {
  const perConnection = (mode: Mode) => 1e6 / median((samples.get(key(mode, c)) ?? []).map((s) => s.rps));
  const addedBy = (mode: Mode) => (perConnection(mode) - perConnection("direct")).toFixed(0);
  console.log(
    `new connection (connect + TLS handshakes + request, one at a time): direct ${perConnection("direct").toFixed(0)}µs, traced ${perConnection("traced").toFixed(0)}µs, added ${addedBy("traced")}µs${floor ? `; through haproxy ${perConnection("haproxy").toFixed(0)}µs, added ${addedBy("haproxy")}µs` : ""}`,
  );
}
