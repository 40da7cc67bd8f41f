import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { ConfigError, parseConfig } from "~/lib/env.ts";
import { log } from "~/lib/logger.ts";
import { createApp } from "~/server.ts";

export async function main(_args: string[]): Promise<number> {
  let config;
  try {
    config = parseConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tapscope server: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: config.databaseUrl ? undefined : join(config.dataDir, "pglite"),
  });
  const app = createApp({ config, db: database.db });
  const server = Bun.serve({ port: config.port, fetch: (req) => app.handle(req) });
  log.info("tapscope server listening", {
    url: config.publicUrl,
    port: server.port,
    database: database.kind,
    dataDir: config.dataDir,
  });

  const { promise: stopped, resolve } = Promise.withResolvers<number>();
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    await server.stop(false); // stop accepting, let in-flight requests finish
    await database.close();
    resolve(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  return stopped;
}
