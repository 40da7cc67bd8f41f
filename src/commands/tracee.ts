import { runTracee } from "~/agent/seccomp/tracee.ts";

/** The hidden `__tracee` step of `tapscope run` (see src/agent/seccomp/tracee.ts); kept light so the launcher starts fast. */
export async function main(args: string[]): Promise<number> {
  const argv = args[0] === "--" ? args.slice(1) : args;
  return runTracee(argv, process.env);
}
