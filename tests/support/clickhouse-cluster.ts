import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClickHouseServer, killWatched, startClickHouseServer } from "./clickhouse.ts";
import { freePort } from "./ports.ts";

/**
 * A ClickHouse cluster for tests, from Debian's packages: one ZooKeeper (the `zookeeper` package's jars, for
 * distributed DDL) and `shards` clickhouse-servers, each one shard of the cluster `name` in every server's
 * remote_servers.
 */
export type ClickHouseCluster = {
  name: string;
  /** Every server, shard by shard (with replicas: shard 1's replicas first). */
  shards: ClickHouseServer[];
  zookeeperPort: number;
  stop: () => void;
};

const zookeeperClasspath = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/*";

export async function startZooKeeper(): Promise<{ port: number; stop: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-zk-"));
  const port = await freePort();
  // Same watchdog as the servers: gone with the test process.
  const watchdog = [
    'java -Xmx256m -Dzookeeper.admin.enableServer=false -Dzookeeper.4lw.commands.whitelist=ruok -cp "$2" org.apache.zookeeper.server.ZooKeeperServerMain "$3" "$4/data" >"$4/log" 2>&1 & zk=$!',
    'while kill -0 "$1" 2>/dev/null && kill -0 "$zk" 2>/dev/null; do sleep 1; done',
    'kill -9 "$zk" 2>/dev/null; rm -rf "$4"',
  ].join("\n");
  const child = Bun.spawn(["sh", "-c", watchdog, "sh", String(process.pid), zookeeperClasspath, String(port), dir], {
    stdout: "ignore",
    stderr: "ignore",
  });
  child.unref();
  const stop = () => {
    killWatched(child);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const answer = await new Promise<string>((resolve) => {
      let text = "";
      Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open: (s) => void s.write("ruok"),
          data: (_s, d) => {
            text += d.toString();
          },
          close: () => resolve(text),
          error: () => resolve(""),
          connectError: () => resolve(""),
        },
      }).catch(() => resolve(""));
    });
    if (answer === "imok") return { port, stop };
    await Bun.sleep(200);
  }
  stop();
  throw new Error("ZooKeeper did not start (apt-get install zookeeper)");
}

export async function startClickHouseCluster(
  options: { shards?: number; replicas?: number; name?: string } = {},
): Promise<ClickHouseCluster> {
  const name = options.name ?? "tapscope_test";
  const replicas = options.replicas ?? 1;
  const zk = await startZooKeeper();
  const layout = Array.from({ length: options.shards ?? 2 }, (_, shard) =>
    Array.from({ length: replicas }, (_, replica) => ({ shard, replica })),
  );
  const servers = layout.flat();
  const ports = await Promise.all(servers.map(async () => ({ http: await freePort(), tcp: await freePort() })));
  const remote = layout
    .map(
      (replicasOf) =>
        `<shard><internal_replication>${replicas > 1}</internal_replication>${replicasOf
          .map(({ shard, replica }) => `<replica><host>127.0.0.1</host><port>${ports[shard * replicas + replica]!.tcp}</port></replica>`)
          .join("")}</shard>`,
    )
    .join("");
  const shards = await Promise.all(
    servers.map(({ shard, replica }, i) =>
      startClickHouseServer({
        ports: ports[i],
        extraConfig:
          `<remote_servers><${name}>${remote}</${name}></remote_servers>` +
          `<zookeeper><node><host>127.0.0.1</host><port>${zk.port}</port></node></zookeeper>` +
          `<interserver_http_host>127.0.0.1</interserver_http_host>` +
          `<macros><shard>${String(shard + 1).padStart(2, "0")}</shard><replica>r${replica + 1}</replica></macros>`,
      }),
    ),
  );
  return {
    name,
    shards,
    zookeeperPort: zk.port,
    stop: () => {
      for (const s of shards) s.stop();
      zk.stop();
    },
  };
}
