#!/usr/bin/env bun
/**
 * `npm run bench:tls`: what decrypting a program's outbound HTTPS costs. The program is wrk (OpenSSL) making HTTPS
 * requests to a local Bun HTTPS server, run direct and under `tapscope run` (TLS interception on), alternated in one
 * run so machine noise hits both. Keep-alive at 1 and 16 connections with 1 B and 64 KiB responses, and a new
 * connection per request (`Connection: close`: the TLS handshake, with the upstream handshake and the leaf for the
 * host already made, is in every request). Prints throughput traced/direct and the added p50/p99.
 *
 * Options: --rounds N (default 3), --duration S (default 4), --tapscope "<command>" (default: bun src/main.ts),
 * --only TEXT (the cases whose name contains it, e.g. --only new).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { makeCa, makeLeaf } from "../../tests/agent/tls-pki.ts";
import { median, optionOf } from "../capture/measure.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "3"));
const duration = Number(option("duration", "4"));
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
const cases = allCases.filter((c) => c.name.includes(option("only", "")));
type Mode = "direct" | "traced";
type Sample = { rps: number; p50: number; p99: number };
const samples = new Map<string, Sample[]>();
const key = (mode: Mode, c: Case) => `${mode}/${c.name}/${c.conns}`;

const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-tls-"));
makeCa(dir, "ca");
const leaf = makeLeaf(dir, "ca", "server", ["DNS:localhost", "IP:127.0.0.1"]);
const caFile = join(dir, "ca.crt");
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

function wrkArgs(c: Case, seconds: number): string[] {
  const args = [`-t${Math.min(2, c.conns)}`, `-c${c.conns}`, `-d${seconds}s`, "--latency"];
  if (c.newConnection) args.push("-H", "Connection: close");
  return [...args, `https://127.0.0.1:${port}/${c.size}`];
}

function run(mode: Mode, c: Case): Sample {
  const wrk = ["wrk", ...wrkArgs(c, duration)];
  // The program trusts the server's CA the way a user says so; the run verifies the server against it.
  const command = mode === "direct" ? wrk : [...tapscope, "run", "--no-publish", "--", ...wrk];
  const res = spawnSync(command[0]!, command.slice(1), { encoding: "utf8", env: { ...process.env, SSL_CERT_FILE: caFile } });
  const out = res.stdout;
  const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(out)?.[1]);
  if (!rps) throw new Error(`wrk printed no figures (${mode}, ${c.name}):\n${out}\n${res.stderr}`);
  return { rps, p50: micros(/^\s*50%\s+(\S+)/m.exec(out)?.[1] ?? ""), p99: micros(/^\s*99%\s+(\S+)/m.exec(out)?.[1] ?? "") };
}

try {
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`round ${round}/${rounds}\n`);
    for (const c of cases) {
      const modes: Mode[] = round % 2 ? ["direct", "traced"] : ["traced", "direct"];
      for (const mode of modes) {
        const sample = run(mode, c);
        const list = samples.get(key(mode, c)) ?? [];
        list.push(sample);
        samples.set(key(mode, c), list);
        process.stderr.write(
          `  ${mode.padEnd(6)} ${c.name.padEnd(19)} c=${String(c.conns).padStart(2)}  ${sample.rps.toFixed(0).padStart(6)} req/s  p50 ${sample.p50}µs  p99 ${sample.p99}µs\n`,
        );
      }
    }
  }
} finally {
  server.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `\nHTTPS capture overhead: median of ${rounds} alternated runs of ${duration}s each (wrk over TLS, ${navigator.hardwareConcurrency} CPUs)`,
);
console.log("case                 conns  direct req/s  traced req/s  traced/direct  added p50   added p99");
for (const c of cases) {
  const med = (mode: Mode, pick: (s: Sample) => number) => median((samples.get(key(mode, c)) ?? []).map(pick));
  const signed = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(0)}µs`;
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
      (med("traced", (s) => s.rps) / med("direct", (s) => s.rps)).toFixed(2).padStart(13),
      signed(med("traced", (s) => s.p50) - med("direct", (s) => s.p50)).padStart(10),
      signed(med("traced", (s) => s.p99) - med("direct", (s) => s.p99)).padStart(10),
    ].join("  "),
  );
}
// wrk's latency starts after the connection is made: a new connection's handshake shows in its rate, one at a time.
for (const c of cases.filter((x) => x.newConnection && x.conns === 1)) {
  const perConnection = (mode: Mode) => 1e6 / median((samples.get(key(mode, c)) ?? []).map((s) => s.rps));
  console.log(
    `new connection (connect + TLS handshakes + request, one at a time): direct ${perConnection("direct").toFixed(0)}µs, traced ${perConnection("traced").toFixed(0)}µs, added ${(perConnection("traced") - perConnection("direct")).toFixed(0)}µs`,
  );
}
