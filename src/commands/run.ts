import { isatty } from "node:tty";
import { runFront } from "~/agent/lifecycle/front.ts";
import { checkPlatform } from "~/agent/platform.ts";
import { say } from "~/agent/say.ts";
import { selfCommand } from "~/agent/self-command.ts";

/**
 * `tapscope run [options] -- <command> [args]`: runs the command exactly as if started directly, with its TCP traffic
 * relayed and traced. This process is the front the shell waits for (src/agent/lifecycle/front.ts), kept small: the
 * supervisor (`__supervise`, supervise.ts) reads the options, prints the usage and does the tracing.
 */
export async function main(args: string[]): Promise<number> {
  const unavailable = checkPlatform();
  if (unavailable) {
    say(unavailable);
    return 1;
  }
  return runFront({
    command: [...selfCommand(), "__supervise", ...args],
    env: process.env,
    isInteractive: isatty(0),
  });
}
