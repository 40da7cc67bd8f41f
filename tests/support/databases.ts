import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";

/**
 * Real database servers for the database-call capture tests, each in a scratch directory on a free port, gone with the
 * test process (a watchdog shell stops it when this process is gone): PostgreSQL with password (SCRAM) logins and,
 * when asked, TLS; MariaDB; Redis. Each has a database "shop" and a user "app" whose password is `password`.
 */
export type DatabaseServer = { port: number; dir: string; stop(): void };

export const dbPassword = "app-Secret-7";

function run(args: string[], asUser?: string): string {
  const [cmd, ...rest] = asUser && process.getuid?.() === 0 ? ["runuser", "-u", asUser, "--", ...args] : args;
  const result = spawnSync(cmd!, rest, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${args[0]} failed (${result.status}): ${result.stderr || result.stdout}`);
  return result.stdout;
}

/** Starts `argv` under a watchdog that kills it once this process is gone; resolves when `ready` says so. */
async function watched(name: string, dir: string, argv: string[], ready: () => Promise<boolean>, asUser?: string): Promise<() => void> {
  const watchdog = [
    '"$@" >"$DIR/server.log" 2>&1 & p=$!',
    'while kill -0 "$PARENT" 2>/dev/null && kill -0 "$p" 2>/dev/null; do sleep 0.2; done',
    'kill -9 "$p" 2>/dev/null',
  ].join("\n");
  const user = asUser && process.getuid?.() === 0 ? ["runuser", "-u", asUser, "--"] : [];
  const child = Bun.spawn(["sh", "-c", watchdog, "sh", ...user, ...argv], {
    env: { ...process.env, DIR: dir, PARENT: String(process.pid) },
    stdout: "ignore",
    stderr: "ignore",
  });
  child.unref();
  const stop = () => {
    Bun.spawnSync(["pkill", "-KILL", "-P", String(child.pid)]);
    child.kill("SIGKILL");
  };
  process.once("exit", stop);
  // A busy machine starts servers slowly.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await ready()) return stop;
    if (child.exitCode !== null) break;
    await Bun.sleep(100);
  }
  stop();
  const log = await Bun.file(join(dir, "server.log"))
    .text()
    .catch(() => "");
  throw new Error(`${name} did not start: ${log.slice(-2000)}`);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function pgBin(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(`${root}/${v}/bin/initdb`)) : [];
  return `${root}/${versions.sort((a, b) => Number(b) - Number(a))[0] ?? "15"}/bin`;
}

/**
 * PostgreSQL with password logins over TCP: SCRAM (which over TLS offers channel binding), or MD5 (`auth: "md5"`, the
 * password stored as MD5 too); `tls`: a server certificate and key, and ssl on.
 */
export async function startPostgres(
  options: { tls?: { cert: string; key: string }; auth?: "scram" | "md5" } = {},
): Promise<DatabaseServer> {
  const auth = options.auth === "md5" ? "md5" : "scram-sha-256";
  const bin = pgBin();
  if (!existsSync(`${bin}/initdb`)) throw new Error("these tests need PostgreSQL (apt-get install postgresql)");
  const dir = mkdtempSync(join(tmpdir(), "tapscope-dbcalls-pg-"));
  const isRoot = process.getuid?.() === 0;
  const owner = isRoot ? "postgres" : undefined;
  if (isRoot) {
    const uid = Number(run(["id", "-u", "postgres"]).trim());
    const gid = Number(run(["id", "-g", "postgres"]).trim());
    chownSync(dir, uid, gid);
  }
  const pwfile = join(dir, "pw");
  writeFileSync(pwfile, `${dbPassword}\n`);
  if (isRoot) chownSync(pwfile, Number(run(["id", "-u", "postgres"]).trim()), 0);
  const data = join(dir, "data");
  run(
    [
      `${bin}/initdb`,
      "-D",
      data,
      "-U",
      "postgres",
      "--auth-local=trust",
      `--auth-host=${auth}`,
      `--pwfile=${pwfile}`,
      "--no-sync",
      "-E",
      "UTF8",
    ],
    owner,
  );
  const port = await freePort();
  const settings = [
    `port=${port}`,
    "listen_addresses='127.0.0.1'",
    `unix_socket_directories='${dir}'`,
    "fsync=off",
    "max_connections=100",
    `password_encryption='${auth}'`,
  ];
  if (options.tls) {
    for (const [name, pem] of [
      ["server.crt", options.tls.cert],
      ["server.key", options.tls.key],
    ] as const) {
      const file = join(data, name);
      writeFileSync(file, pem);
      chmodSync(file, 0o600);
      if (isRoot) chownSync(file, Number(run(["id", "-u", "postgres"]).trim()), Number(run(["id", "-g", "postgres"]).trim()));
    }
    settings.push("ssl=on", "ssl_cert_file='server.crt'", "ssl_key_file='server.key'");
  }
  writeFileSync(join(data, "postgresql.auto.conf"), `${settings.join("\n")}\n`);
  if (isRoot) chownSync(join(data, "postgresql.auto.conf"), Number(run(["id", "-u", "postgres"]).trim()), 0);
  const stop = await watched("PostgreSQL", dir, [`${bin}/postgres`, "-D", data], () => accepts(port), owner);
  const psql = (sql: string) =>
    run(["psql", "-h", dir, "-p", String(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], owner);
  // The server accepts connections a moment before it accepts logins.
  for (let i = 0; ; i++) {
    try {
      psql("SELECT 1");
      break;
    } catch (error) {
      if (i > 100) throw error;
      await Bun.sleep(100);
    }
  }
  psql(`CREATE USER app PASSWORD '${dbPassword}'`);
  psql("CREATE DATABASE shop OWNER app");
  return {
    port,
    dir,
    stop: () => {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** MariaDB (Debian's mariadb-server), its datadir made fresh. */
export async function startMariadb(): Promise<DatabaseServer> {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-dbcalls-mariadb-"));
  const data = join(dir, "data");
  run([
    "mariadb-install-db",
    "--no-defaults",
    `--datadir=${data}`,
    "--user=root",
    "--auth-root-authentication-method=socket",
    "--skip-test-db",
  ]);
  const port = await freePort();
  const socket = join(dir, "sock");
  const stop = await watched(
    "MariaDB",
    dir,
    [
      "mariadbd",
      "--no-defaults",
      `--datadir=${data}`,
      `--port=${port}`,
      "--bind-address=127.0.0.1",
      `--socket=${socket}`,
      "--user=root",
      "--skip-log-bin",
      "--innodb-buffer-pool-size=16M",
      `--pid-file=${join(dir, "pid")}`,
    ],
    () => accepts(port),
  );
  run([
    "mariadb",
    "-S",
    socket,
    "-u",
    "root",
    "-e",
    `CREATE DATABASE shop; CREATE USER 'app'@'%' IDENTIFIED BY '${dbPassword}'; GRANT ALL ON shop.* TO 'app'@'%';`,
  ]);
  return {
    port,
    dir,
    stop: () => {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Redis (Debian's redis-server) in memory, with a password for `app` (ACL) and the default user. */
export async function startRedisServer(): Promise<DatabaseServer> {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-dbcalls-redis-"));
  const port = await freePort();
  const stop = await watched(
    "Redis",
    dir,
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--requirepass", dbPassword],
    () => accepts(port),
  );
  return {
    port,
    dir,
    stop: () => {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
