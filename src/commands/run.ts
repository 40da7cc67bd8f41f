import { basename } from "node:path";
import { checkPlatform, InterceptionUnavailable, launch } from "~/agent/launch.ts";
import { formatLogLine } from "~/agent/log-line.ts";
import type { RedactMode } from "~/agent/redact.ts";
import type { ConnectionObserver } from "~/agent/relay/observer.ts";
import { pipeStats } from "~/agent/relay/pipe.ts";
import { runTracee } from "~/agent/seccomp/tracee.ts";
import { createTracer, DEFAULT_PAYLOAD_LIMIT } from "~/agent/tracer.ts";
import { hostMetadata } from "~/agent/event.ts";
import { parseAgentConfig, parseHostEnvironment } from "~/lib/env.ts";

/**
 * `tapscope run [--log] [--service NAME] [--payload-limit BYTES] [--redact redact|hash|keep] -- <command> [args]`
 * Runs the command exactly as if started directly, with its TCP traffic relayed and traced.
 */
export type RunOptions = {
  log: boolean;
  service: string | undefined;
  payloadLimit: number;
  redact: RedactMode;
  command: string[];
};

const usage = "usage: tapscope run [--log] [--service NAME] [--payload-limit BYTES] [--redact redact|hash|keep] -- <command> [args...]";

export function parseRunArgs(args: string[]): RunOptions | string {
  const options: RunOptions = { log: false, service: undefined, payloadLimit: DEFAULT_PAYLOAD_LIMIT, redact: "redact", command: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      options.command = args.slice(i + 1);
      break;
    }
    if (!arg.startsWith("-")) {
      options.command = args.slice(i);
      break;
    }
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string | undefined => inline ?? args[++i];
    if (flag === "--log") options.log = true;
    else if (flag === "--service") {
      const v = value();
      if (!v) return "--service needs a name";
      options.service = v;
    } else if (flag === "--payload-limit") {
      const v = Number(value());
      if (!Number.isInteger(v) || v < 0) return "--payload-limit needs a whole number of bytes";
      options.payloadLimit = v;
    } else if (flag === "--redact") {
      const v = value();
      if (v !== "redact" && v !== "hash" && v !== "keep") return "--redact must be redact, hash or keep";
      options.redact = v;
    } else if (flag === "-h" || flag === "--help") return usage;
    else return `unknown option ${flag}`;
  }
  if (options.command.length === 0) return usage;
  return options;
}

const say = (line: string) => process.stderr.write(`tapscope: ${line}\n`);

/** Forwarded to the program; the terminal already delivers SIGINT/SIGQUIT to its whole process group. */
function forwardSignals(pid: number): void {
  const fromTerminal = new Set(["SIGINT", "SIGQUIT", "SIGTSTP"]);
  const isInteractive = Boolean(process.stdin.isTTY);
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGCONT"] as const) {
    process.on(signal, () => {
      if (isInteractive && fromTerminal.has(signal)) return;
      try {
        process.kill(pid, signal);
      } catch {}
    });
  }
}

export async function main(args: string[]): Promise<number> {
  const parsed = parseRunArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`tapscope: ${parsed}\n${parsed === usage ? "" : `${usage}\n`}`);
    return 2;
  }
  const unavailable = checkPlatform();
  if (unavailable) {
    say(unavailable);
    return 1;
  }
  const agent = parseAgentConfig();
  const service = parsed.service ?? agent.service ?? basename(parsed.command[0]!);
  let events = 0;
  const tracer = createTracer({
    host: hostMetadata(parseHostEnvironment()),
    service,
    redact: parsed.redact,
    payloadLimit: parsed.payloadLimit,
    onEvent(event) {
      events++;
      if (parsed.log) process.stderr.write(`${formatLogLine(event, { color: Boolean(process.stderr.isTTY) })}\n`);
    },
  });
  const observer: ConnectionObserver = tracer;

  let launched;
  try {
    launched = await launch({ argv: parsed.command, env: process.env, observer, say });
  } catch (err) {
    if (err instanceof InterceptionUnavailable) {
      if (err.message) say(err.message);
      const code = typeof err.cause === "number" ? err.cause : 1;
      return code;
    }
    throw err;
  }
  forwardSignals(launched.pid);
  const code = await launched.exited;
  tracer.flush();
  const stats = tracer.stats();
  if (stats.droppedEvents > 0 || pipeStats.tapErrors > 0) {
    say(`${stats.droppedEvents} events dropped, ${pipeStats.tapErrors} connections passed through untraced after a parser fault`);
  }
  void events;
  return code;
}

/** The hidden `__tracee` step (see src/agent/seccomp/tracee.ts). */
export async function traceeMain(args: string[]): Promise<number> {
  const argv = args[0] === "--" ? args.slice(1) : args;
  return runTracee(argv, process.env);
}
