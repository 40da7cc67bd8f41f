import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "./ports.ts";

/**
 * A real PostgreSQL for tests. With TEST_DATABASE_URL, that server is used; otherwise a throwaway cluster
 * (Debian's initdb + pg_ctl, run as the postgres user since tests run as root) is started once per test
 * process in a temp dir, on a free port, and stopped at exit. Every caller gets its own fresh database.
 */
/** Debian's server binaries: version 15 here, the newest installed one elsewhere. */
function pgBin(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(`${root}/${v}/bin/initdb`)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return `${root}/${newest ?? "15"}/bin`;
}
const PG_BIN = pgBin();

let server: Promise<string> | undefined;

export async function createTestDatabase(): Promise<string> {
  server ??= process.env.TEST_DATABASE_URL ? Promise.resolve(process.env.TEST_DATABASE_URL) : startCluster();
  const baseUrl = await server;
  const name = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database made by createTestDatabase (matters with a long-lived TEST_DATABASE_URL server). */
export async function dropTestDatabase(url: string): Promise<void> {
  if (!server) return;
  const name = new URL(url).pathname.slice(1);
  if (!/^t_[0-9a-f]{16}$/.test(name)) return;
  const admin = postgres(await server, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end();
  }
}

function asPostgres(args: string[]): void {
  const isRoot = process.getuid?.() === 0;
  const [cmd, ...rest] = isRoot ? ["runuser", "-u", "postgres", "--", ...args] : args;
  const result = spawnSync(cmd!, rest, { encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`${args[0]} failed (${result.status}): ${result.stderr || result.stdout}`);
  }
}

async function startCluster(): Promise<string> {
  if (!existsSync(`${PG_BIN}/initdb`)) {
    throw new Error(`PostgreSQL tests need ${PG_BIN} (apt-get install postgresql) or TEST_DATABASE_URL`);
  }
  const dir = mkdtempSync(join(tmpdir(), "tapscope-pg-"));
  const data = join(dir, "data");
  if (process.getuid?.() === 0) {
    const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(id.stdout.trim()), Number(gid.stdout.trim()));
  }
  asPostgres([`${PG_BIN}/initdb`, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  asPostgres([`${PG_BIN}/pg_ctl`, "-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-s", "start"]);
  // A watchdog stops the cluster and removes its files once this process is gone: test runners do not
  // reliably run exit handlers, and pg_ctl's server is a daemon that would otherwise outlive every run.
  const stop = [`${PG_BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-s", "stop"];
  const asUser = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--"] : [];
  const watchdog = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; shift; "$@" >/dev/null 2>&1; rm -rf "$DIR"';
  const child = Bun.spawn(["sh", "-c", watchdog, "sh", String(process.pid), ...asUser, ...stop], {
    env: { ...process.env, DIR: dir },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  child.unref();
  process.once("exit", () => {
    try {
      asPostgres(stop);
    } catch {
      // the cluster may already be gone
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}
