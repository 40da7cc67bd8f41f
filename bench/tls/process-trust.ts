#!/usr/bin/env bun
/**
 * `bun bench/tls/process-trust.ts`: what following each process's own trust costs. With interception on, every
 * execve is trapped (the process's environment is read before its first open) and the opens of trust files go to
 * the supervisor; `--tls off` traps neither. Run side by side, alternated per round:
 * - a shell running /bin/true N times (N execs): direct, `tapscope run --tls off`, `tapscope run`;
 * - Python making a default SSL context (it opens the system bundle: answered with the merged one);
 * - a JVM loading its default trust (its cacerts open answered with the merged store, built once per run).
 * Then, in this process, the per-connection lookup of a process's trust (its environ, cmdline and exe read, the
 * profile found) that the TLS gate makes at each ClientHello.
 *
 * Each is measured in CPU time (tapscope's threads and the program's, from bash's `times`), not wall time.
 * Options: --rounds N (default 5), --execs N (default 1000), --baseline DIR (another checkout, e.g. `git archive` of the
 * code before: its `tapscope run` with interception on is run alongside as "base on").
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ProcessTrust } from "../../src/agent/tls/process-trust.ts";
import { offeredTrust, programTrust } from "../../src/agent/tls/trust.ts";
import { median } from "../capture/measure.ts";
import { optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "5", "1"));
const execs = Number(option("execs", "1000", "20"));
const tapscope = [process.execPath, join(root, "src/main.ts"), "run", "--no-publish"];
const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-trust-"));

const baseline = option("baseline", "");
type Mode = "direct" | "tls off" | "tls on" | "base on";
const modes: Mode[] = ["direct", "tls off", "tls on", ...(baseline ? (["base on"] as const) : [])];
const argvFor = (mode: Mode, argv: string[]) =>
  mode === "direct"
    ? argv
    : mode === "tls off"
      ? [...tapscope, "--tls", "off", "--", ...argv]
      : mode === "base on"
        ? [process.execPath, join(resolve(baseline), "src/main.ts"), "run", "--no-publish", "--", ...argv]
        : [...tapscope, "--", ...argv];

/**
 * CPU milliseconds (user + system) of a command and everything it waited for (tapscope, its threads, the program):
 * bash's `times` after it. Far steadier than wall time on a shared machine.
 */
function cpuMs(argv: string[]): number {
  const quoted = argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const out = spawnSync("bash", ["-c", `${quoted} >/dev/null 2>&1 || exit 1; times`], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`${argv.join(" ")} failed`);
  const children = out.stdout.trim().split("\n")[1] ?? "";
  let total = 0;
  for (const m of children.matchAll(/(\d+)m([\d.]+)s/g)) total += Number(m[1]) * 60_000 + Number(m[2]) * 1000;
  return total;
}

const loop = (n: number) => ["sh", "-c", `i=0; while [ $i -lt ${n} ]; do /bin/true; i=$((i+1)); done`];
const workloads: Array<{ name: string; argv: string[]; empty?: string[] }> = [
  // Timed with N execs and with none: the difference over N is each mode's cost per exec, start-up cost aside.
  { name: `shell running /bin/true ${execs} times`, argv: loop(execs), empty: loop(0) },
  { name: "python3: ssl.create_default_context()", argv: ["python3", "-c", "import ssl; ssl.create_default_context()"] },
];
if (spawnSync("javac", ["-version"]).status === 0) {
  writeFileSync(
    join(dir, "Trust.java"),
    `public class Trust { public static void main(String[] a) throws Exception { javax.net.ssl.TrustManagerFactory f = javax.net.ssl.TrustManagerFactory.getInstance("PKIX"); f.init((java.security.KeyStore) null); } }`,
  );
  spawnSync("javac", ["-d", dir, join(dir, "Trust.java")]);
  workloads.push({ name: "java: the default TrustManager (cacerts)", argv: ["java", "-cp", dir, "Trust"] });
}

const ms = (n: number) => `${n.toFixed(0)} ms`;
for (const workload of workloads) {
  const times = new Map<string, number[]>();
  const record = (key: string, value: number) => times.set(key, [...(times.get(key) ?? []), value]);
  cpuMs(argvFor("tls on", workload.argv)); // warm the page cache
  for (let r = 0; r < rounds; r++) {
    for (const mode of modes) {
      record(mode, cpuMs(argvFor(mode, workload.argv)));
      if (workload.empty) record(`${mode} empty`, cpuMs(argvFor(mode, workload.empty)));
    }
  }
  const of = (key: string) => median(times.get(key)!);
  const parts = modes.map((mode) => `${mode} ${ms(of(mode))}`);
  console.log(`${workload.name}, CPU: ${parts.join(", ")}`);
  if (workload.empty) {
    const perExec = modes.map((mode) => `${mode} ${(((of(mode) - of(`${mode} empty`)) * 1000) / execs).toFixed(0)} µs`);
    console.log(`  CPU per exec (${execs} execs less none, over ${execs}): ${perExec.join(", ")}`);
  }
}

// The lookup at each ClientHello, for this very process (a Bun, not a JVM: the native path with its environment).
const base = programTrust(process.env);
const offered = offeredTrust({ env: process.env, programPems: base.pems, caPem: base.pems[0] ?? "" });
const trust = new ProcessTrust({ caPem: base.pems[0] ?? "", runEnv: process.env, basePems: base.pems, offered, say: () => {} });
for (let i = 0; i < 200; i++) trust.profileFor(process.pid);
const lookups = 5000;
const started = performance.now();
for (let i = 0; i < lookups; i++) trust.profileFor(process.pid);
console.log(
  `trust lookup per TLS connection (reads /proc/<pid>/environ, cmdline, exe, cwd): ${(((performance.now() - started) * 1000) / lookups).toFixed(1)} µs`,
);
offered.cleanup();
rmSync(dir, { recursive: true, force: true });
