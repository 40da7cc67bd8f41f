import { constants } from "node:os";

/**
 * `tapscope run` is two processes. The front is the one the shell started and waits for: it starts the supervisor
 * (`tapscope __supervise`, which launches the program and owns everything the tracing needs), forwards signals to
 * the program, and exits with the program's exit code. When the program leaves processes running (a daemon, a
 * backgrounded server), the front returns as the program did while the supervisor goes on tracing them in the
 * background: the pid the shell waits for must exit, and what traces must live on, and a process cannot hand live
 * sockets, a seccomp listener and a relay to another one, so the supervisor is a process of its own from the start.
 *
 * The supervisor tells the front, one line each on a socket (fd 3 in the supervisor):
 *   `program <pid>`     the program's pid: signals go there from now on;
 *   `waiting`           the program exited and `--wait` waits for what it left: signals go to the supervisor;
 *   `background <code>` the program exited with <code> and left processes the supervisor traces on: exit now.
 * Otherwise the front exits as the supervisor does, which exits with the program's code.
 */
export const FRONT_PID_VAR = "TAPSCOPE_INTERNAL_FRONT_PID";
export const FRONT_FD_VAR = "TAPSCOPE_INTERNAL_FRONT_FD";
/** The supervisor's end of the link, as it sees it. */
export const FRONT_FD = 3;

const FORWARDED = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGCONT"] as const;
/** The terminal already delivers these to the whole foreground process group, the program included. */
const FROM_TERMINAL = new Set<string>(["SIGINT", "SIGQUIT", "SIGTSTP"]);

export type FrontOptions = {
  /** How to start the supervisor: this binary with `__supervise` and the run's arguments. */
  command: string[];
  env: Record<string, string | undefined>;
  isInteractive: boolean;
};

function exitCodeOf(code: number | null, signal: string | number | null): number {
  if (typeof signal === "number") return 128 + signal;
  if (signal) return 128 + (signalNumbers[signal] ?? 0);
  return code ?? 1;
}

const signalNumbers = constants.signals as Record<string, number>;

export async function runFront(options: FrontOptions): Promise<number> {
  const supervisor = Bun.spawn(options.command, {
    stdio: ["inherit", "inherit", "inherit", "pipe"],
    env: { ...(options.env as Record<string, string>), [FRONT_PID_VAR]: String(process.pid), [FRONT_FD_VAR]: String(FRONT_FD) },
  });
  let target = 0;
  /** Signals that came before the program's pid: it gets them as soon as it is known. */
  const early: NodeJS.Signals[] = [];
  const deliver = (signal: NodeJS.Signals) => {
    try {
      process.kill(target, signal);
    } catch {}
  };
  for (const signal of FORWARDED) {
    process.on(signal, () => {
      if (options.isInteractive && FROM_TERMINAL.has(signal)) return;
      if (target) deliver(signal);
      else early.push(signal);
    });
  }
  // The terminal's SIGTSTP stops the program; the front stays, as a single `tapscope run` always did.
  if (options.isInteractive) process.on("SIGTSTP", () => {});

  const told = new Promise<number>((resolve) => {
    const link = supervisor.stdio[3] as unknown as number;
    const reader = Bun.file(link).stream().getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffered += decoder.decode(value, { stream: true });
        let end = buffered.indexOf("\n");
        while (end >= 0) {
          const [word = "", arg = ""] = buffered.slice(0, end).split(" ");
          buffered = buffered.slice(end + 1);
          end = buffered.indexOf("\n");
          if (word === "program" && Number(arg) > 0) {
            target = Number(arg);
            for (const signal of early.splice(0)) deliver(signal);
          } else if (word === "waiting") target = supervisor.pid;
          else if (word === "background") resolve(Number(arg) || 0);
        }
      }
    })().catch(() => {});
  });
  const exited = supervisor.exited.then(() => exitCodeOf(supervisor.exitCode, supervisor.signalCode));
  return Promise.race([told, exited]);
}
