#!/usr/bin/env bun
/**
 * `bun bench/capture/relay-only.ts -- <command>`: the program under interception with the relay but no
 * observer (no HTTP parsing, no events), so bench:capture can tell the relay's cost from the tracer's.
 */
import { join, resolve } from "node:path";
import { launch } from "../../src/agent/launch.ts";

const args = process.argv.slice(2);
const argv = args[0] === "--" ? args.slice(1) : args;
const main = join(resolve(import.meta.dir, "../.."), "src/main.ts");
const launched = await launch({
  argv,
  env: process.env,
  observer: null,
  say: (line) => process.stderr.write(`tapscope: ${line}\n`),
  self: [process.execPath, main],
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.kill(launched.pid, signal));
process.exit(await launched.exited);
