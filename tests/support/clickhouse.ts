import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";
import { freePort } from "./ports.ts";

/**
 * A real ClickHouse for tests: CLICKHOUSE_URL when set, otherwise Debian's clickhouse-server (18.16)
 * started once per test process from a copy of its packaged config with paths and ports moved into a
 * temporary directory, stopped when the process exits. startClickHouseServer starts more of them (a cluster's shards).
 */

const serverBinaries = ["/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"];
const packagedConfig = "/etc/clickhouse-server";

/** Ends a watchdog shell started by the tests and the process it watches (its child). */
export function killWatched(watchdog: { pid: number; kill: (signal?: number | NodeJS.Signals) => void }): void {
  Bun.spawnSync(["pkill", "-KILL", "-P", String(watchdog.pid)]);
  watchdog.kill("SIGKILL");
}

function binary(): string {
  const found = serverBinaries.find((path) => existsSync(path));
  if (found) return found;
  throw new Error("clickhouse-server is not installed (apt-get install clickhouse-server)");
}

/** One clickhouse-server of the tests: its HTTP URL and native port, and a way to kill it (and start it again on the same data). */
export type ClickHouseServer = {
  url: string;
  tcpPort: number;
  dir: string;
  /** SIGKILL, files kept (restart picks them up). */
  kill: () => Promise<void>;
  /** Starts it again on the same ports and data; resolves once it answers. */
  restart: () => Promise<void>;
  /** Kills it and removes its files. */
  stop: () => void;
};

/**
 * Starts a clickhouse-server in its own temporary directory; `extraConfig` is XML put in its config.d (a cluster's
 * remote_servers, zookeeper, macros). A watchdog shell owns the server and kills it (and removes its files) once this
 * process is gone: test runners do not reliably run exit handlers, and an orphaned server would live on.
 */
export async function startClickHouseServer(
  options: { extraConfig?: string; ports?: { http: number; tcp: number } } = {},
): Promise<ClickHouseServer> {
  const bin = binary();
  const dir = mkdtempSync(join(tmpdir(), "tapscope-ch-"));
  for (const sub of ["data", "tmp", "user_files", "format_schemas", "log", "config.d"]) mkdirSync(join(dir, sub), { recursive: true });
  const http = options.ports?.http ?? (await freePort());
  const tcp = options.ports?.tcp ?? (await freePort());
  const interserver = await freePort();
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
  if (options.extraConfig) writeFileSync(join(dir, "config.d", "extra.xml"), `<yandex>${options.extraConfig}</yandex>\n`);
  let child: Subprocess | undefined;
  const watchdog = [
    '"$2" --config-file="$3/config.xml" >/dev/null 2>&1 & ch=$!',
    'while kill -0 "$1" 2>/dev/null && kill -0 "$ch" 2>/dev/null && [ ! -e "$3/stop" ]; do sleep 0.2; done',
    'kill -9 "$ch" 2>/dev/null; wait "$ch" 2>/dev/null; [ -e "$3/stop" ] && rm -f "$3/stop" || rm -rf "$3"',
  ].join("\n");
  const url = `http://127.0.0.1:${http}`;
  const launch = async () => {
    child = spawn(["sh", "-c", watchdog, "sh", String(process.pid), bin, dir], { cwd: dir, stdout: "ignore", stderr: "ignore" });
    child.unref();
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) break;
      try {
        const res = await fetch(`${url}/ping`, { headers: { connection: "close" } });
        if (res.ok) return;
      } catch {}
      await Bun.sleep(100);
    }
    let log = "";
    try {
      log = readFileSync(join(dir, "log/error.log"), "utf8").slice(-2000);
    } catch {}
    throw new Error(`clickhouse-server did not start: ${log}`);
  };
  const kill = async () => {
    if (!child) return;
    // Keep the files: the watchdog removes them only when the test process is gone.
    writeFileSync(join(dir, "stop"), "");
    // The server only: its watchdog sees it gone, removes the stop file and exits by itself.
    Bun.spawnSync(["pkill", "-KILL", "-P", String(child.pid)]);
    await child.exited;
    child = undefined;
  };
  const stop = () => {
    if (child) killWatched(child);
    child = undefined;
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  await launch().catch((err) => {
    stop();
    throw err;
  });
  return { url, tcpPort: tcp, dir, kill, restart: launch, stop };
}

let started: Promise<string> | undefined;

async function start(): Promise<string> {
  // Tests honour an external server given by the CI environment.
  const external = process.env.CLICKHOUSE_URL;
  if (external) return external;
  return (await startClickHouseServer()).url;
}

/** The URL of a running ClickHouse (started on first use). */
export function clickhouseUrl(): Promise<string> {
  started ??= start();
  return started;
}
