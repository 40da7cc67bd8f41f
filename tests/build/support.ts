import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";

export const isRoot = process.getuid?.() === 0;
const setpriv = Bun.which("setpriv");

/** A fresh directory others can enter (installer tests run as nobody when we are root). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tapscope-${prefix}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/** A stand-in for the tapscope binary: answers `version` like the real one (or fails, when broken). */
export function fakeBinary(dir: string, name: string, versionLine: string, isBroken = false) {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  const body = isBroken
    ? `#!/bin/sh\necho "cannot execute binary file: Exec format error" >&2\nexit 126\n`
    : `#!/bin/sh\nif [ "$1" = version ]; then echo "${versionLine}"; exit 0; fi\necho "fake tapscope: $*"\n`;
  writeFileSync(path, body);
  chmodSync(path, 0o755);
  return path;
}

/** The real app (createApp on a fresh PGlite) listening on a free port, with PUBLIC_URL set to that port. */
export async function startServer(env: Record<string, string> = {}) {
  const database = await openDatabase({});
  let app: ReturnType<typeof createApp> | undefined;
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => app!.handle(req) });
  const url = `http://127.0.0.1:${server.port}`;
  const config = parseConfig({
    DATA_DIR: tempDir("data"),
    SESSION_SECRET: "test-session-secret-0123456789abcdef",
    PUBLIC_URL: url,
    ...env,
  });
  app = createApp(createRuntime({ config, db: database.db }));
  return {
    url,
    stop: async () => {
      await server.stop(true);
      await database.close();
    },
  };
}

export type Ran = { code: number; stdout: string; stderr: string };

export async function sh(script: string, options: { env: Record<string, string>; asUser?: number; cwd?: string }): Promise<Ran> {
  const cmd = options.asUser
    ? [setpriv ?? "setpriv", `--reuid=${options.asUser}`, `--regid=${options.asUser}`, "--clear-groups", "sh", "-c", script]
    : ["sh", "-c", script];
  const proc = Bun.spawn(cmd, { env: options.env, cwd: options.cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** A PATH holding only the listed tools (symlinks), to run the installer without, say, curl. */
export function restrictedPath(tools: string[]): string {
  const dir = tempDir("path");
  for (const tool of tools) {
    const found = Bun.which(tool);
    if (found) Bun.spawnSync(["ln", "-s", found, join(dir, tool)]);
  }
  return dir;
}
