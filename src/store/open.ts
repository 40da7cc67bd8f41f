import { join } from "node:path";
import { type Config, memoryShares } from "~/lib/server/env.ts";
import type { EventStore, StoreLimits } from "./types.ts";

/** The server's event store, chosen once: ClickHouse when CLICKHOUSE_URL is set (sharded over CLICKHOUSE_CLUSTER when named), else DuckDB in DATA_DIR. */
export async function openEventStore(
  config: Pick<Config, "clickhouseUrl" | "dataDir"> &
    Partial<Pick<Config, "clickhouseCluster">> &
    Partial<Pick<Config, "memoryLimitBytes" | "duckdbThreads">>,
  limits?: Partial<StoreLimits>,
): Promise<EventStore> {
  if (config.clickhouseUrl) {
    const { openClickHouseStore } = await import("./clickhouse.ts");
    return openClickHouseStore({ url: config.clickhouseUrl, cluster: config.clickhouseCluster, limits });
  }
  const { openDuckDbStore } = await import("./duckdb.ts");
  return openDuckDbStore({
    path: join(config.dataDir, "events.duckdb"),
    limits,
    memoryLimitBytes: config.memoryLimitBytes ? memoryShares(config.memoryLimitBytes).duckdbBytes : undefined,
    threads: config.duckdbThreads,
    tempDirectory: join(config.dataDir, "duckdb-tmp"),
  });
}
