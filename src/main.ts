#!/usr/bin/env bun
/** The single binary's entry: `tapscope server|run|proxy|worker|query|tail|version`. */
import { versionLine } from "./lib/server/version.ts";

const [command = "help", ...rest] = process.argv.slice(2);

const commands: Record<string, () => Promise<{ main: (args: string[]) => Promise<number> }>> = {
  server: () => import("./commands/server.ts"),
  run: () => import("./commands/run.ts"),
  proxy: () => import("./commands/proxy.ts"),
  worker: () => import("./commands/worker.ts"),
  query: () => import("./commands/query.ts"),
  tail: () => import("./commands/tail.ts"),
  endpoints: () => import("./commands/endpoints.ts"),
  __supervise: () => import("./commands/supervise.ts"),
  __tracee: () => import("./commands/tracee.ts"),
};

const usage = `Tapscope: zero-code network tracer

Usage:
  tapscope run [options] -- <command> [args...]   trace a program's HTTP traffic
  tapscope proxy --listen :8080 --to host:3000     trace through a reverse proxy (where run cannot intercept)
  tapscope server                                  run the Tapscope server (dashboard and API)
  tapscope worker --server URL --token TOKEN       keep an org's events on this machine (self-hosted worker)
  tapscope query --since 1h [--filter F] [--format table|json|har]   search captured requests
  tapscope tail [--filter F] [--format line|json]  follow captured requests as they happen
  tapscope endpoints --since 1h [--filter F] [--format table|json]   requests, errors and latency per route
  tapscope version                                 print the version
`;

if (command === "version" || command === "--version") {
  console.log(versionLine());
} else if (command === "help" || command === "--help" || command === "-h") {
  process.stdout.write(usage);
} else {
  const load = commands[command];
  if (!load) {
    process.stderr.write(`tapscope: unknown command "${command}"\n\n${usage}`);
    process.exit(2);
  }
  // In the compiled binary the server's DuckDB addon needs its native library loaded before its module is.
  if (command === "server" || command === "worker") await (await import("./lib/server/embedded.ts")).loadDuckDbNative();
  const code = await (await load()).main(rest);
  process.exit(code);
}
