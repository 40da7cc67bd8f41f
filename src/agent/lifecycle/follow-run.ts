import { closeSync, openSync, readdirSync, readlinkSync } from "node:fs";
import { basename } from "node:path";
import type { Launched } from "../launch.ts";
import { redactCommandLine } from "../redact.ts";
import { libc } from "../seccomp/ffi.ts";
import type { Session } from "../session.ts";
import type { FrontLink } from "./front-link.ts";
import { descendants, describeProcess, reapAdopted, reapRemaining, signalEach, type TracedProcess } from "./processes.ts";
import { openRunLog } from "./run-log.ts";

/**
 * The supervisor's life after the launch (ADR 0027): the program runs; when it exits, the run ends if nothing it
 * started is left under the filter. If processes are left (a daemon, a double fork, a server put in the background),
 * they keep working and keep being traced until the last of them exits: by default the front returns with the
 * program's exit code and the supervisor goes on in the background, saying once where it went; with `--wait` the run
 * waits for them in the foreground. "The last of them exited" is the kernel's word, not a guess from /proc: the
 * seccomp listener hangs up once no task uses the filter (see Supervisor.lastExited).
 */
export type FollowOptions = {
  launched: Launched;
  session: Session;
  /** Null when the supervisor was started without a front: it then forwards signals to the program itself. */
  front: FrontLink | null;
  command: string[];
  /** `--wait`: stay in the foreground until the last traced process exits. */
  isWait: boolean;
  isInteractive: boolean;
  /** Where the background log may go (runLogDirs). */
  logDirs: string[];
  say: (line: string) => void;
  /** Once nothing is traced any more, after the last connections settled: files of the run, the TLS summary. */
  onDone: () => void;
};

/** How long processes found alive as the program exits are given to finish by themselves before they count as left. */
const LEFT_GRACE_MS = 100;
/** How long an empty process list may disagree with the kernel before the run goes on anyway. */
const LEFT_SETTLE_MS = 1000;
/** How long, at most, the supervisor waits for what it adopted to become reapable once nothing is traced. */
const REAP_WAIT_MS = 2000;
/** How long, at most, the connections the program left open are waited for after the last process exits. */
const EXIT_SETTLE_MS = 500;
/** A stop signal repeated at least this much later kills what the first one did not stop. */
const ESCALATE_AFTER_MS = 1000;
const MAX_LISTED = 6;
/** How long the hand-over waits, at most, for the server to answer the run's first join. */
const JOIN_WAIT_MS = 5000;

const PROGRAM_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGCONT"] as const;
const STOP_SIGNALS = new Set<string>(["SIGTERM", "SIGINT", "SIGQUIT"]);
const FROM_TERMINAL = new Set<string>(["SIGINT", "SIGQUIT", "SIGTSTP"]);

function listProcesses(processes: TracedProcess[]): string {
  const shown = processes.slice(0, MAX_LISTED).map((p) => describeProcess(p));
  const more = processes.length - shown.length;
  return more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "es"}`;
}

function fdTarget(fd: number | string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "";
  }
}

/**
 * stdin from /dev/null, stdout and stderr to the log: the terminal (or the caller's pipes) are let go, so a caller
 * reading the command's output (`$(tapscope run -- nginx)`, ssh) sees it end. Any other descriptor on what they were
 * (a runtime's own copy of stderr) is pointed at the same replacement.
 */
function detachStdio(logFd: number | null): void {
  const devNull = openSync("/dev/null", "r+");
  const replacements = new Map<string, number>();
  for (const [fd, replacement] of [
    [0, devNull],
    [1, logFd ?? devNull],
    [2, logFd ?? devNull],
  ] as const) {
    const target = fdTarget(fd);
    if (target && target !== "/dev/null") replacements.set(target, replacement);
    libc.dup2(replacement, fd);
  }
  let fds: string[] = [];
  try {
    fds = readdirSync("/proc/self/fd");
  } catch {}
  for (const fd of fds) {
    const replacement = Number(fd) > 2 ? replacements.get(fdTarget(fd)) : undefined;
    if (replacement !== undefined && replacement !== Number(fd)) libc.dup2(replacement, Number(fd));
  }
  closeSync(devNull);
  if (logFd !== null) closeSync(logFd);
}

/**
 * The processes still traced once the program exited, or null when none is. Asked of the kernel (synchronously, not
 * through the notification loop's message, which a busy machine may delay); processes on their way out get a moment.
 */
async function whatIsLeft(supervisor: Launched["supervisor"]): Promise<TracedProcess[] | null> {
  const graceEnd = Date.now() + LEFT_GRACE_MS;
  while (supervisor.hasTracedProcesses()) {
    if (Date.now() >= graceEnd) {
      const left = descendants(process.pid);
      if (left.length > 0) return left;
      // Traced, yet none below us in /proc: only processes between their exit and the kernel's last word.
      if (Date.now() >= graceEnd + LEFT_SETTLE_MS) return left;
    }
    await Bun.sleep(Date.now() >= graceEnd ? 50 : 5);
  }
  return null;
}

export async function followRun(options: FollowOptions): Promise<number> {
  const { launched, session, front, say } = options;
  const { supervisor } = launched;
  const name = basename(options.command[0] ?? "the program");

  // Bun waits for the launcher itself; every other child is an orphan we adopted, reaped here.
  const waitedByBun = new Set([launched.pid]);
  process.on("SIGCHLD", () => reapAdopted(waitedByBun));

  let phase: "program" | "left" = "program";
  let stopAt = 0;
  const stop = (signal: string) => {
    const tree = descendants(process.pid);
    if (tree.length === 0) return;
    const now = Date.now();
    if (stopAt === 0) {
      stopAt = now;
      say(`${signal}: stopping the ${count(tree.length, "traced process")} (SIGTERM)`);
      signalEach(tree, "SIGTERM");
    } else if (now - stopAt >= ESCALATE_AFTER_MS) {
      say(`${signal} again: killing the ${count(tree.length, "traced process")} (SIGKILL)`);
      signalEach(tree, "SIGKILL");
    }
  };
  let onFrontGone = () => {};
  for (const signal of PROGRAM_SIGNALS) {
    process.on(signal, () => {
      if (phase === "left") {
        if (STOP_SIGNALS.has(signal)) stop(signal);
        else if (signal === "SIGHUP" && front?.isGone()) onFrontGone();
        return;
      }
      // While the program runs the front forwards signals to it; without a front, this process does.
      if (front || (options.isInteractive && FROM_TERMINAL.has(signal))) return;
      try {
        process.kill(launched.pid, signal);
      } catch {}
    });
  }
  if (options.isInteractive) process.on("SIGTSTP", () => {});

  let isBackground = false;
  /** Lets the terminal (or the caller's pipes) go and carries on with the messages in the run's log. */
  const goBackground = (left: TracedProcess[], code: number, destination: string | null) => {
    if (isBackground) return;
    const log = openRunLog(options.logDirs, process.pid);
    const seen = destination ? `; their requests go to ${destination}` : "";
    say(`they stay traced: tapscope goes on in the background (pid ${process.pid}) until the last of them exits${seen}`);
    say(
      `stop them as you would without tapscope (their pid file, their own stop command); \`kill ${process.pid}\` stops them all. ` +
        (log ? `Its messages go on in ${log.path}` : "No private directory could be made for its messages: it goes on silently"),
    );
    front?.handOver(code);
    detachStdio(log?.fd ?? null);
    isBackground = true;
    const command = redactCommandLine(options.command, "redact").join(" ");
    say(`${new Date().toISOString()}: tracing in the background what \`${command}\` left running: ${listProcesses(left)}`);
  };

  const code = await launched.exited;
  waitedByBun.delete(launched.pid);
  reapAdopted(waitedByBun);
  const left = await whatIsLeft(supervisor);
  if (left) {
    phase = "left";
    // The program is gone; what it left is not. Should `tapscope run` be killed from now on, the supervisor carries on
    // in the background instead of dying with it.
    front?.softenDeath();
    onFrontGone = () => {
      if (isBackground) return;
      say("tapscope run was ended; what the program left stays traced");
      goBackground(descendants(process.pid), code, session.destination());
    };
    if (front?.isGone()) onFrontGone();
    const what = left.length > 0 ? `${count(left.length, "process")} running: ${listProcesses(left)}` : "processes running";
    say(`${name} exited with ${code} and left ${what}`);
    // Say where their requests can be seen: the live link is printed once the server answered the first join.
    await session.joined(JOIN_WAIT_MS);
    const destination = session.destination();
    if (isBackground) {
      // Already there: the front was ended meanwhile.
    } else if (!supervisor.hasTracedProcesses()) {
      say("they have exited meanwhile");
    } else if (options.isWait && front) {
      say(
        `--wait: tapscope traces them and waits until the last of them exits${destination ? `; their requests go to ${destination}` : ""}`,
      );
      say("stop them as you would without tapscope, or stop them all with Ctrl-C or SIGTERM to tapscope");
      front.tell("waiting");
    } else goBackground(left, code, destination);
    // Nothing else may be left to keep this process running while it waits for the kernel's word.
    const keepAlive = setInterval(() => {}, 1 << 30);
    await supervisor.lastExited;
    clearInterval(keepAlive);
    await reapRemaining(waitedByBun, REAP_WAIT_MS);
  }

  // The program's sockets closed as it exited; the relay sees those closes a moment later, and a connection's event
  // (a TLS connection not decrypted, any non-HTTP one) is made at its close: wait for them, briefly.
  const settleBy = Date.now() + EXIT_SETTLE_MS;
  while (session.openConnections() > 0 && Date.now() < settleBy) await Bun.sleep(5);
  await session.finish();
  options.onDone();
  if (isBackground) say(`${new Date().toISOString()}: the last traced process exited; tapscope exits`);
  return code;
}
