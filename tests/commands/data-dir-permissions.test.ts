import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The server (and a self-hosted worker) started under umask 022 keep DATA_DIR private: captured traffic and the
 * metadata database are readable and writable by the server's user alone.
 */
const root = join(import.meta.dir, "../..");
const scratch = mkdtempSync(join(tmpdir(), "tapscope-perms-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every path under dir (dir included) with group or other bits set. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if (stat.mode & 0o077) found.push(`${path} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(dir);
  return found;
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String);
}

/** Runs `tapscope <args>` under umask 022 until its output matches `ready`, then stops it. */
async function runUntil(args: string[], env: Record<string, string>, ready: RegExp): Promise<string> {
  const proc = Bun.spawn(["sh", "-c", 'umask 022; exec "$@"', "sh", process.execPath, "src/main.ts", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) output += decoder.decode(chunk.value, { stream: true });
  };
  void read(proc.stdout);
  void read(proc.stderr);
  const deadline = Date.now() + 45_000;
  try {
    while (!ready.test(output)) {
      if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}: ${output}`);
      if (Date.now() > deadline) throw new Error(`not ready in time: ${output}`);
      await Bun.sleep(50);
    }
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  return output;
}

describe("DATA_DIR is private to the server's user", () => {
  test("a fresh DATA_DIR: the folder 0700, the secret, PGlite and DuckDB files without group or other bits", async () => {
    const dataDir = join(scratch, "fresh");
    await runUntil(["server"], { DATA_DIR: dataDir, PORT: "0", LOG_LEVEL: "info" }, /tapscope server listening/);
    expect(files(dataDir)).toEqual(expect.arrayContaining(["session-secret", "events.duckdb", "pglite"]));
    expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
    expect(openToOthers(dataDir)).toEqual([]);
  }, 60_000);

  test("an existing DATA_DIR open to others is narrowed to 0700, with a log line", async () => {
    const dataDir = join(scratch, "existing");
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    // A secret an older version left readable by others.
    writeFileSync(join(dataDir, "session-secret"), "an-existing-secret-0123456789abcdef\n", { mode: 0o644 });
    chmodSync(join(dataDir, "session-secret"), 0o644);
    // Something a user keeps there themselves is theirs to decide about.
    writeFileSync(join(dataDir, "README.txt"), "notes\n");
    chmodSync(join(dataDir, "README.txt"), 0o644);
    const output = await runUntil(["server"], { DATA_DIR: dataDir, PORT: "0" }, /tapscope server listening/);
    expect(output).toContain(`${dataDir} was open to other users (mode 755); made it private (700)`);
    expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
    expect(openToOthers(dataDir)).toEqual([`${join(dataDir, "README.txt")} 644`]);
  }, 60_000);

  test("a self-hosted worker's data dir too", async () => {
    const dataDir = join(scratch, "worker");
    await runUntil(
      ["worker", "--server", "http://127.0.0.1:9", "--token", "tso_not_a_real_token", "--data-dir", dataDir],
      {},
      /events stored in/,
    );
    expect(files(dataDir)).toContain("events.duckdb");
    expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
    expect(openToOthers(dataDir)).toEqual([]);
  }, 60_000);
});
