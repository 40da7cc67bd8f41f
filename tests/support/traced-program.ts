import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");

export type TracedProgram = {
  /** The program's listening port, as `tapscope run` printed it. */
  port: number;
  /** What `ready` matched in the run's output. */
  ready: RegExpExecArray;
  /** All the run printed so far, stdout and stderr. */
  output: () => string;
  stop: () => Promise<void>;
};

/**
 * `tapscope run [runArgs] -- command` as a user starts it, from the repository's own source: resolves once the run
 * printed the program's port and `ready` matches its output (30 s at most).
 */
export async function startTracedProgram({
  runArgs = [],
  command,
  env,
  ready,
}: {
  runArgs?: string[];
  command: string[];
  env: Record<string, string>;
  ready: RegExp;
}): Promise<TracedProgram> {
  const proc = Bun.spawn([join(root, "node_modules/.bin/bun"), join(root, "src/main.ts"), "run", ...runArgs, "--", ...command], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const decoder = new TextDecoder();
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        output += decoder.decode(value);
      }
    })();
  }
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const port = Number(/port (\d+)/.exec(output)?.[1] ?? 0);
    const matched = ready.exec(output);
    if (port && matched) return { port, ready: matched, output: () => output, stop };
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`program did not start: ${output}`);
    }
    await Bun.sleep(50);
  }
}
