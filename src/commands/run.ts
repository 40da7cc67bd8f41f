import { basename } from "node:path";
import { checkPlatform } from "~/agent/platform.ts";
import type { RedactMode } from "~/agent/redact.ts";
import { createSession, say } from "~/agent/session.ts";
import { DEFAULT_PAYLOAD_LIMIT } from "~/agent/tracer.ts";
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
  eventsFile: string | undefined;
  publish: boolean;
  command: string[];
};

const usage = `usage: tapscope run [options] -- <command> [args...]
  --log                    print one line per request on stderr
  --service NAME           service name on every event (default: TAPSCOPE_SERVICE or the executable name)
  --payload-limit BYTES    body bytes kept per request and response (default 65536)
  --redact MODE            redact (default), hash or keep secret headers and query parameters
  --events-file FILE       also append every event to FILE as JSON lines
  --no-publish             do not send events to the server (TAPSCOPE_ENDPOINT)`;

export function parseRunArgs(args: string[]): RunOptions | string {
  const options: RunOptions = {
    log: false,
    service: undefined,
    payloadLimit: DEFAULT_PAYLOAD_LIMIT,
    redact: "redact",
    eventsFile: undefined,
    publish: true,
    command: [],
  };
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
    else if (flag === "--no-publish") options.publish = false;
    else if (flag === "--events-file") {
      const v = value();
      if (!v) return "--events-file needs a file name";
      options.eventsFile = v;
    }
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
  if (parsed === usage && (args.includes("-h") || args.includes("--help"))) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
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
  const session = createSession({
    agent,
    host: parseHostEnvironment(),
    service: parsed.service ?? agent.service ?? basename(parsed.command[0]!),
    redact: parsed.redact,
    payloadLimit: parsed.payloadLimit,
    log: parsed.log,
    eventsFile: parsed.eventsFile,
    publish: parsed.publish,
  });
  // Loaded only where it can work: it binds libc through bun:ffi.
  const { InterceptionUnavailable, launch } = await import("~/agent/launch.ts");
  let launched;
  try {
    launched = await launch({ argv: parsed.command, env: process.env, observer: session.tracer, say });
  } catch (err) {
    if (err instanceof InterceptionUnavailable) {
      if (err.message) say(err.message);
      return typeof err.cause === "number" ? err.cause : 1;
    }
    throw err;
  }
  forwardSignals(launched.pid);
  const code = await launched.exited;
  await session.finish();
  return code;
}
