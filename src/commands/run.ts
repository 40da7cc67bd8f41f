import { basename } from "node:path";
import { checkPlatform } from "~/agent/platform.ts";
import { defaultRelayThreads } from "~/agent/relay/relay-threads.ts";
import { createSession, say } from "~/agent/session.ts";
import { prepareTls } from "~/agent/tls/prepare.ts";
import type { Result } from "~/lib/result.ts";
import { parseAgentConfig, parseHostEnvironment, withoutAgentCredentials } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { type CaptureOptions, captureFlags, captureOptions } from "./capture-flags.ts";

/**
 * `tapscope run [--log] [--service NAME] [--payload-limit BYTES] [--redact redact|hash|keep] -- <command> [args]`
 * Runs the command exactly as if started directly, with its TCP traffic relayed and traced.
 */
export type RunOptions = CaptureOptions & { command: string[]; tls: boolean; relayThreads: number; passCredentials: boolean };

const usage = `usage: tapscope run [options] -- <command> [args...]
  --log                    print one line per request on stderr
  --service NAME           service name on every event (default: TAPSCOPE_SERVICE or the executable name)
  --payload-limit BYTES    body bytes kept per request and response (default 65536)
  --redact MODE            redact (default), hash or keep secret headers and query parameters
  --events-file FILE       also append every event to FILE as JSON lines
  --no-publish             do not send events to the server (TAPSCOPE_ENDPOINT)
  --tls on|off             decrypt the program's outbound HTTPS (default on); off records TLS connections only
  --relay-threads N        threads that relay and parse inbound connections (default: cores minus one, 1 to 4;
                           TAPSCOPE_RELAY_THREADS); each connection stays on one thread
  --pass-credentials       leave TAPSCOPE_TOKEN and TAPSCOPE_LINK_ID in the program's environment (a nested
                           tapscope needs them); by default the program never sees them`;

const runFlags = {
  ...captureFlags,
  tls: { type: "string" },
  "relay-threads": { type: "string" },
  "pass-credentials": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** The most relay threads one may ask for. */
const MAX_ASKED_RELAY_THREADS = 16;

function relayThreads(asked: string | undefined): Result<{ count: number }> {
  if (asked === undefined || asked === "") return { ok: true, count: defaultRelayThreads() };
  const count = Number(asked);
  if (!Number.isInteger(count) || count < 1 || count > MAX_ASKED_RELAY_THREADS) {
    return { ok: false, error: `--relay-threads must be a whole number from 1 to ${MAX_ASKED_RELAY_THREADS}, got "${asked}"` };
  }
  return { ok: true, count };
}

/** The options, or why not: the usage itself for --help or a missing command. */
export function parseRunArgs(args: string[], env: Record<string, string | undefined> = process.env): Result<{ options: RunOptions }> {
  const parsed = parseFlags(args, runFlags, { hasCommand: true });
  if (!parsed.ok) return parsed;
  if (parsed.flags.help) return { ok: false, error: usage };
  const capture = captureOptions(parsed.flags);
  if (!capture.ok) return capture;
  const tls = parsed.flags.tls ?? "on";
  if (tls !== "on" && tls !== "off") return { ok: false, error: "--tls must be on or off" };
  if (parsed.command.length === 0) return { ok: false, error: usage };
  const threads = relayThreads(parsed.flags["relay-threads"] ?? env.TAPSCOPE_RELAY_THREADS);
  if (!threads.ok) return threads;
  return {
    ok: true,
    options: {
      ...capture.options,
      command: parsed.command,
      tls: tls === "on",
      relayThreads: threads.count,
      passCredentials: parsed.flags["pass-credentials"] === true,
    },
  };
}

/** How long, at most, the connections the program left open are waited for after it exits. */
const EXIT_SETTLE_MS = 500;

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
  const result = parseRunArgs(args);
  if (!result.ok) {
    if (result.error === usage && (args.includes("-h") || args.includes("--help"))) {
      process.stdout.write(`${usage}\n`);
      return 0;
    }
    process.stderr.write(`tapscope: ${result.error}\n${result.error === usage ? "" : `${usage}\n`}`);
    return 2;
  }
  const unavailable = checkPlatform();
  if (unavailable) {
    say(unavailable);
    return 1;
  }
  const agent = parseAgentConfig();
  const { command, tls: isTlsOn, relayThreads: threadCount, passCredentials, ...capture } = result.options;
  const session = createSession({
    ...capture,
    agent,
    host: parseHostEnvironment(),
    service: capture.service ?? agent.service ?? basename(command[0]!),
    relayThreads: threadCount,
  });
  // Loaded only where it can work: it binds libc through bun:ffi.
  const { InterceptionUnavailable, launch } = await import("~/agent/launch.ts");
  const tls = isTlsOn ? await prepareTls(process.env, say) : null;
  const programEnv = passCredentials ? process.env : withoutAgentCredentials(process.env);
  let launched: Awaited<ReturnType<typeof launch>>;
  try {
    launched = await launch({
      argv: command,
      env: tls ? { ...programEnv, ...tls.env } : programEnv,
      observer: session.tracer,
      threads: session.threads,
      tls: tls?.interception ?? null,
      trustOpens: tls?.opens,
      say,
    });
  } catch (err) {
    tls?.cleanup();
    if (err instanceof InterceptionUnavailable) {
      if (err.message) say(err.message);
      return typeof err.cause === "number" ? err.cause : 1;
    }
    throw err;
  }
  forwardSignals(launched.pid);
  const code = await launched.exited;
  tls?.cleanup();
  // The program's sockets closed as it exited; the relay sees those closes a moment later, and a connection's event
  // (a TLS connection not decrypted, any non-HTTP one) is made at its close: wait for them, briefly.
  const settleBy = Date.now() + EXIT_SETTLE_MS;
  while (session.openConnections() > 0 && Date.now() < settleBy) await Bun.sleep(5);
  await session.finish();
  const summary = tls?.interception.summary();
  if (summary) say(summary);
  return code;
}
