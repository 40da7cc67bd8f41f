/** What bench/capture's side-by-side scripts share: waiting for a port, a process's CPU time, medians. */

import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";

export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
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

/** CPU time of a process, all threads, in ns (schedstat: exact, unlike the 10 ms ticks of /proc/<pid>/stat). */
export function cpuNanos(pid: number): number {
  let total = 0;
  for (const one of tapscopePids(pid)) {
    try {
      for (const task of readdirSync(`/proc/${one}/task`)) {
        try {
          total += Number(readFileSync(`/proc/${one}/task/${task}/schedstat`, "utf8").split(" ")[0]);
        } catch {}
      }
    } catch {}
  }
  return total;
}

/**
 * The processes of `tapscope run` started as `pid`: the front and its supervisor (`__supervise`, ADR 0027), which does
 * the work, and not the program below it; `pid` alone for anything else.
 */
export function tapscopePids(pid: number): number[] {
  const pids = [pid];
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {}
  for (const task of tasks) {
    let children: string[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean);
    } catch {}
    for (const child of children) {
      try {
        if (readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0").includes("__supervise")) pids.push(Number(child));
      } catch {}
    }
  }
  return pids;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * haproxy in mode tcp (or http) with one thread (or `threads`), relaying `bind` to `server` (each a haproxy bind / server line's arguments, TLS
 * options included): the floor of a user-space relay that bench:capture and bench:tls measure against.
 */
export function haproxyTcpConfig(bind: string, server: string, threads = 1, mode: "tcp" | "http" = "tcp"): string {
  return [
    "global",
    `  nbthread ${threads}`,
    "defaults",
    `  mode ${mode}`,
    "  timeout connect 5s",
    "  timeout client 60s",
    "  timeout server 60s",
    "frontend relay",
    `  bind ${bind}`,
    "  default_backend app",
    "backend app",
    `  server app ${server}`,
    "",
  ].join("\n");
}

/** Stops a measured run: the relay in front (haproxy), then the program, waiting for the program to exit. */
export async function stopMeasured(relay: ChildProcess | null, child: ChildProcess): Promise<void> {
  relay?.kill("SIGTERM");
  child.kill("SIGTERM");
  await new Promise((done) => child.once("exit", done));
}
