import { readdirSync, readlinkSync } from "node:fs";
import { constants } from "node:os";
import type { ConnectionObserver } from "./relay/observer.ts";
import type { RelayThreads } from "./relay/relay-threads.ts";
import { E, errno, pidfdGetfd, pidfdOpen } from "./seccomp/ffi.ts";
import type { NotifMessage, WorkerInit } from "./seccomp/messages.ts";
import { SUPERVISOR_PID_VAR, TRACEE_SETUP_FAILED, TRAP_OPENS_VAR } from "./seccomp/tracee.ts";
import { selfCommand } from "./self-command.ts";
import { type Supervisor, startSupervisor } from "./supervisor/index.ts";
import type { TlsInterception } from "./tls/interception.ts";

/**
 * Starts `argv` under interception: re-executes this binary as `__tracee`, takes the seccomp listener
 * from it, and runs the supervisor. The program inherits stdio, gets the same argv and environment,
 * and its exit status comes back the way a shell reports it.
 */
export type LaunchOptions = {
  argv: string[];
  env: Record<string, string | undefined>;
  observer: ConnectionObserver | null;
  /** Relay threads for inbound connections (`--relay-threads` over 1); absent: the main thread relays them. */
  threads?: RelayThreads | null;
  /** Outbound TLS interception (the program's env must already trust its CA); null or absent: off. */
  tls?: TlsInterception | null;
  /** Which read-only opens the supervisor answers with merged trust (through `tls`); absent: opens are not trapped. */
  trustOpens?: WorkerInit["trustOpens"];
  say: (line: string) => void;
  /** How to start this program again (default: selfCommand()). */
  self?: string[];
  beforeDispatch?: (m: NotifMessage) => void;
  /** The program's stdout: inherited (default) or a pipe (tests). */
  stdout?: "inherit" | "pipe";
  /** Called with the program's pid as soon as it exists (the launcher becomes the program at its execve). */
  onStart?: (pid: number) => void;
};

export type Launched = {
  pid: number;
  stdout: ReadableStream<Uint8Array> | null;
  supervisor: Supervisor;
  /** Resolves with the exit code (128+n for a death by signal n). */
  exited: Promise<number>;
};

export class InterceptionUnavailable extends Error {
  override name = "InterceptionUnavailable";
}

function findListenerFd(pid: number): number {
  let entries: string[];
  try {
    entries = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return -1;
  }
  for (const entry of entries) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${entry}`) === "anon_inode:seccomp notify") return Number(entry);
    } catch {}
  }
  return -1;
}

export function signalNumber(name: string | number | null | undefined): number {
  if (!name) return 0;
  if (typeof name === "number") return name;
  return (constants.signals as Record<string, number>)[name] ?? 0;
}

export async function launch(options: LaunchOptions): Promise<Launched> {
  const child = Bun.spawn([...(options.self ?? selfCommand()), "__tracee", "--", ...options.argv], {
    stdio: ["inherit", options.stdout ?? "inherit", "inherit"],
    env: {
      ...(options.env as Record<string, string>),
      [SUPERVISOR_PID_VAR]: String(process.pid),
      ...(options.trustOpens ? { [TRAP_OPENS_VAR]: "1" } : {}),
    },
  });
  options.onStart?.(child.pid);
  const exited = child.exited.then((code) => {
    const signal = signalNumber(child.signalCode);
    return signal ? 128 + signal : code;
  });
  let hasExited = false;
  exited.then(() => {
    hasExited = true;
  });

  // The launcher parks in its execve until we hold the listener; find it in its fd table.
  const deadline = Date.now() + 15_000;
  let remoteFd = -1;
  while (remoteFd < 0) {
    if (hasExited) {
      const code = await exited;
      throw new InterceptionUnavailable(code === TRACEE_SETUP_FAILED ? "" : `the launcher exited with ${code}`, {
        cause: code,
      });
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new InterceptionUnavailable("the launcher did not install its seccomp filter within 15 s");
    }
    remoteFd = findListenerFd(child.pid);
    if (remoteFd < 0) await Bun.sleep(2);
  }
  const pidfd = pidfdOpen(child.pid);
  const listener = pidfd >= 0 ? pidfdGetfd(pidfd, remoteFd) : -1;
  if (listener < 0) {
    const err = errno();
    child.kill("SIGKILL");
    await exited;
    if (err === E.EPERM || err === E.EACCES) {
      throw new InterceptionUnavailable(
        "no permission to take the seccomp listener (pidfd_getfd needs CAP_SYS_PTRACE in containers). " +
          "Run the container with `docker run --cap-add=SYS_PTRACE` (Kubernetes: securityContext.capabilities.add: [SYS_PTRACE]), " +
          "or use `tapscope proxy --listen :8080 --to 127.0.0.1:3000`.",
      );
    }
    if (err === E.ENOSYS) {
      throw new InterceptionUnavailable("this kernel has no pidfd_getfd (Linux 5.6+ needed). Use `tapscope proxy`.");
    }
    throw new InterceptionUnavailable(`could not take the seccomp listener (errno ${err})`);
  }
  let isFatal = false;
  const supervisor = startSupervisor({
    listener,
    observer: options.observer,
    threads: options.threads ?? null,
    tls: options.tls ?? null,
    trustOpens: options.trustOpens ?? null,
    say: options.say,
    beforeDispatch: options.beforeDispatch,
    onFatal: (reason) => {
      if (isFatal) return;
      isFatal = true;
      if (reason === "pidfd_getfd") {
        options.say(
          "no permission to read the program's sockets (pidfd_getfd needs CAP_SYS_PTRACE in containers): its connections run untraced. " +
            "Run the container with `docker run --cap-add=SYS_PTRACE`.",
        );
      }
    },
  });
  const stdout = child.stdout instanceof ReadableStream ? child.stdout : null;
  return { pid: child.pid, stdout, supervisor, exited };
}
