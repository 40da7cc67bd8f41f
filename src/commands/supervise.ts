import { basename } from "node:path";
import { isatty } from "node:tty";
import { followRun } from "~/agent/lifecycle/follow-run.ts";
import { attachFront } from "~/agent/lifecycle/front-link.ts";
import { checkPlatform } from "~/agent/platform.ts";
import { say } from "~/agent/say.ts";
import { createSession } from "~/agent/session.ts";
import { prepareTls } from "~/agent/tls/prepare.ts";
import { parseAgentConfig, parseHostEnvironment, runLogDirs, withoutAgentCredentials } from "~/lib/server/env.ts";
import { parseRunArgs, usage } from "./run-flags.ts";

/**
 * The hidden `__supervise` step of `tapscope run`, started by the front (run.ts) with the same arguments: it
 * launches the program under interception, relays and traces it, publishes, and follows what the program leaves
 * running (src/agent/lifecycle/). Its exit code is the program's.
 */
export async function main(args: string[]): Promise<number> {
  const front = attachFront(process.env);
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
  const { command, tls: isTlsOn, relayThreads: threadCount, passCredentials, isWait, allowReplay, ...capture } = result.options;
  const session = createSession({
    ...capture,
    agent,
    host: parseHostEnvironment(),
    service: capture.service ?? agent.service ?? basename(command[0]!),
    relayThreads: threadCount,
    allowReplay,
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
      onStart: (pid) => front?.tell(`program ${pid}`),
    });
  } catch (err) {
    tls?.cleanup();
    if (err instanceof InterceptionUnavailable) {
      if (err.message) say(err.message);
      return typeof err.cause === "number" ? err.cause : 1;
    }
    throw err;
  }
  return followRun({
    launched,
    session,
    front,
    command,
    isWait,
    isInteractive: isatty(0),
    logDirs: runLogDirs(),
    say,
    onDone: () => {
      tls?.cleanup();
      const summary = tls?.interception.summary();
      if (summary) say(summary);
    },
  });
}
