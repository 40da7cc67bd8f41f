#!/usr/bin/env bun
/**
 * `bun bench/capture/startup.ts`: how long `tapscope run` takes to return, against the program alone, alternated in
 * one run so machine noise hits each the same. Modes: `true` direct and traced (the cost of starting the front, the
 * supervisor and the launcher); a command that leaves a process behind (`sh -c 'sleep 1 &'`), direct and traced (the
 * hand-over to the background supervisor); with --baseline <checkout> (e.g. `git archive` of main), that checkout's
 * `tapscope run -- true` too. Prints medians and each traced mode's ratio to its baseline.
 *
 * Options: --rounds N (default 20), --smoke (2 rounds: it still runs and prints its table; the figures mean nothing).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { median } from "./measure.ts";

const root = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const rounds = Number(option("rounds", args.includes("--smoke") ? "2" : "20"));
const baseline = option("baseline", "");
const run = (main: string) => [process.execPath, main, "run", "--no-publish", "--"];
const leaves = ["sh", "-c", "sleep 1 &"];

const modes: Record<string, string[]> = {
  "true, direct": ["true"],
  "true, traced": [...run(join(root, "src/main.ts")), "true"],
  ...(baseline ? { "true, traced by the baseline": [...run(join(resolve(baseline), "src/main.ts")), "true"] } : {}),
  "leaves a process, direct": leaves,
  "leaves a process, traced": [...run(join(root, "src/main.ts")), ...leaves],
};
const times = new Map<string, number[]>(Object.keys(modes).map((m) => [m, []]));
// Each traced `sleep 1 &` goes on in the background, logging: in a directory of this run's, not the user's.
const logDir = mkdtempSync(join(tmpdir(), "tapscope-startup-"));
for (let i = 0; i < rounds; i++) {
  for (const [mode, argv] of Object.entries(modes)) {
    const started = performance.now();
    // What a command leaves behind may hold its output open: the time is the command's own exit.
    const exited = await Bun.spawn(argv, { stdio: ["ignore", "ignore", "ignore"], env: { ...process.env, XDG_RUNTIME_DIR: logDir } })
      .exited;
    if (exited !== 0) throw new Error(`${mode}: exit ${exited}`);
    times.get(mode)!.push(performance.now() - started);
  }
}
const ms = (mode: string) => median(times.get(mode)!);
console.log(`tapscope run, time to return (median of ${rounds}, ms)`);
for (const mode of times.keys()) console.log(`  ${mode.padEnd(32)} ${ms(mode).toFixed(0).padStart(6)}`);
if (baseline) console.log(`  traced / baseline's traced        ${(ms("true, traced") / ms("true, traced by the baseline")).toFixed(2)}`);
console.log(
  `  hand-over: traced minus direct   ${(ms("leaves a process, traced") - ms("leaves a process, direct")).toFixed(0).padStart(6)}`,
);
console.log(`  start: traced minus direct       ${(ms("true, traced") - ms("true, direct")).toFixed(0).padStart(6)}`);
// Each traced `sleep 1 &` left a background supervisor, which exits with its sleep: let the last ones go first.
await Bun.sleep(1200);
rmSync(logDir, { recursive: true, force: true });
