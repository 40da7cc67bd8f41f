import { readdirSync, readFileSync } from "node:fs";
import { redactCommandLine } from "../redact.ts";
import { libc } from "../seccomp/ffi.ts";

/**
 * The processes a run traces, as /proc shows them. The supervisor is a child subreaper, so everything the program
 * started stays below it in the process tree, whatever daemonized or double-forked on the way: its descendants are
 * exactly the traced processes. Processes come and go while this reads: one that vanishes is simply not listed.
 */
export type TracedProcess = { pid: number; ppid: number; name: string; commandLine: string };

const WNOHANG = 1;

function parseStat(text: string): { ppid: number; name: string; isZombie: boolean } | null {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return null;
  const [state = "", ppid = "0"] = text.slice(close + 2).split(" ", 2);
  return { ppid: Number(ppid), name: text.slice(open + 1, close), isZombie: state === "Z" || state === "X" };
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Every living process below `root` (children, theirs, and so on), zombies left out. */
export function descendants(root: number, procRoot = "/proc"): TracedProcess[] {
  const byParent = new Map<number, TracedProcess[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync(procRoot);
  } catch {}
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const stat = parseStat(readText(`${procRoot}/${pid}/stat`));
    if (!stat || stat.isZombie) continue;
    const args = readText(`${procRoot}/${pid}/cmdline`).replace(/\0+$/, "").split("\0");
    const commandLine = redactCommandLine(args, "redact").join(" ");
    const list = byParent.get(stat.ppid) ?? [];
    list.push({ pid, ppid: stat.ppid, name: stat.name, commandLine });
    byParent.set(stat.ppid, list);
  }
  const out: TracedProcess[] = [];
  const queue = [root];
  const seen = new Set<number>(queue);
  while (queue.length > 0) {
    for (const child of byParent.get(queue.shift()!) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** The direct children of this process (zombies included), from each thread's children list. */
function ownChildren(): number[] {
  const found = new Set<number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync("/proc/self/task");
  } catch {}
  for (const tid of tasks) {
    for (const pid of readText(`/proc/self/task/${tid}/children`).split(" ")) if (pid) found.add(Number(pid));
  }
  return [...found];
}

/**
 * Collects the exit status of every child that has exited, except those in `others` (children whose status
 * someone else waits for: the launcher Bun.spawn started). Orphans reparented to a subreaper are its children; left
 * unreaped they would stay zombies as long as it runs.
 */
export function reapAdopted(others: ReadonlySet<number>): number {
  let reaped = 0;
  for (const pid of ownChildren()) {
    if (others.has(pid)) continue;
    if (libc.waitpid(pid, null, WNOHANG) === pid) reaped++;
  }
  return reaped;
}

/**
 * Reaps the adopted children still between their exit and their status, for at most `waitMs`. Once the filter has no
 * task left they are all exiting, but the kernel tells the listener a moment before it makes them zombies; a
 * supervisor that exited first would leave them to init, which in some containers never reaps.
 */
export async function reapRemaining(others: ReadonlySet<number>, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    reapAdopted(others);
    if (ownChildren().every((pid) => others.has(pid)) || Date.now() >= deadline) return;
    await Bun.sleep(5);
  }
}

/** Sends `signal` to each process; one that is already gone is skipped. Returns how many it reached. */
export function signalEach(processes: TracedProcess[], signal: NodeJS.Signals): number {
  let reached = 0;
  for (const p of processes) {
    try {
      process.kill(p.pid, signal);
      reached++;
    } catch {}
  }
  return reached;
}

/** `nginx (pid 12)`, and the command line when it says more than the name. */
export function describeProcess(p: TracedProcess, maxCommandLine = 80): string {
  const line = p.commandLine.length > maxCommandLine ? `${p.commandLine.slice(0, maxCommandLine - 1)}…` : p.commandLine;
  return line && line !== p.name ? `${p.name} (pid ${p.pid}: ${line})` : `${p.name} (pid ${p.pid})`;
}
