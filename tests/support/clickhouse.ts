import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";

/**
 * A real ClickHouse for tests: CLICKHOUSE_URL when set, otherwise Debian's clickhouse-server (18.16)
 * started once per test process from a copy of its packaged config with paths and ports moved into a
 * temporary directory, stopped when the process exits.
 */

const serverBinaries = ["/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"];
const packagedConfig = "/etc/clickhouse-server";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function binary(): string {
  const found = serverBinaries.find((path) => existsSync(path));
  if (found) return found;
  throw new Error("clickhouse-server is not installed (apt-get install clickhouse-server)");
}

let started: Promise<string> | undefined;
let child: Subprocess | undefined;
let dir: string | undefined;

function stop(): void {
  // The server is the watchdog's child: end it by its parent's pid, then the watchdog.
  if (child) Bun.spawnSync(["pkill", "-KILL", "-P", String(child.pid)]);
  child?.kill("SIGKILL");
  child = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
}

async function start(): Promise<string> {
  // Tests honour an external server given by the CI environment.
  const external = process.env.CLICKHOUSE_URL;
  if (external) return external;
  const bin = binary();
  dir = mkdtempSync(join(tmpdir(), "tapscope-ch-"));
  for (const sub of ["data", "tmp", "user_files", "format_schemas", "log"]) mkdirSync(join(dir, sub), { recursive: true });
  const [http, tcp, interserver] = [await freePort(), await freePort(), await freePort()];
  const config = readFileSync(join(packagedConfig, "config.xml"), "utf8")
    .replace(/<log>[^<]*<\/log>/, `<log>${dir}/log/server.log</log>`)
    .replace(/<errorlog>[^<]*<\/errorlog>/, `<errorlog>${dir}/log/error.log</errorlog>`)
    .replace(/<level>[^<]*<\/level>/, "<level>warning</level>")
    .replace(/<http_port>\d+<\/http_port>/, `<http_port>${http}</http_port>`)
    .replace(/<tcp_port>\d+<\/tcp_port>/, `<tcp_port>${tcp}</tcp_port>`)
    .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, `<interserver_http_port>${interserver}</interserver_http_port>`)
    .replace(/<https_port>\d+<\/https_port>/, "")
    .replace(/<tcp_port_secure>\d+<\/tcp_port_secure>/, "")
    .replace(/<mysql_port>\d+<\/mysql_port>/, "")
    .replace(/<listen_host>::1?<\/listen_host>/g, "")
    .replace(/<path>\/var\/lib\/clickhouse\/<\/path>/, `<path>${dir}/data/</path>`)
    .replace(/<tmp_path>[^<]*<\/tmp_path>/, `<tmp_path>${dir}/tmp/</tmp_path>`)
    .replace(/<user_files_path>[^<]*<\/user_files_path>/, `<user_files_path>${dir}/user_files/</user_files_path>`)
    .replace(/<format_schema_path>[^<]*<\/format_schema_path>/, `<format_schema_path>${dir}/format_schemas/</format_schema_path>`);
  writeFileSync(join(dir, "config.xml"), config);
  writeFileSync(join(dir, "users.xml"), readFileSync(join(packagedConfig, "users.xml")));
  // A watchdog shell owns the server and kills it (and removes its files) once this process is gone:
  // test runners do not reliably run exit handlers, and an orphaned server would live on.
  const watchdog = [
    '"$2" --config-file="$3/config.xml" >/dev/null 2>&1 & ch=$!',
    'while kill -0 "$1" 2>/dev/null && kill -0 "$ch" 2>/dev/null; do sleep 1; done',
    'kill -9 "$ch" 2>/dev/null; wait "$ch" 2>/dev/null; rm -rf "$3"',
  ].join("\n");
  child = spawn(["sh", "-c", watchdog, "sh", String(process.pid), bin, dir], {
    cwd: dir,
    stdout: "ignore",
    stderr: "ignore",
  });
  child.unref();
  process.once("exit", stop);
  const url = `http://127.0.0.1:${http}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const res = await fetch(`${url}/ping`);
      if (res.ok) return url;
    } catch {}
    await Bun.sleep(100);
  }
  const log = (() => {
    try {
      return readFileSync(join(dir, "log/error.log"), "utf8").slice(-2000);
    } catch {
      return "";
    }
  })();
  stop();
  throw new Error(`clickhouse-server did not start: ${log}`);
}

/** The URL of a running ClickHouse (started on first use). */
export function clickhouseUrl(): Promise<string> {
  started ??= start();
  return started;
}
