import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { SERVER_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import { type Broker, connectRedisBroker } from "~/engines/cluster/broker.ts";
import { errorMessage } from "~/lib/errors.ts";
import { raiseDescriptorLimit } from "~/lib/server/descriptor-limit.ts";
import { type Config, ConfigError, parseConfig } from "~/lib/server/env.ts";
import { log } from "~/lib/server/logger.ts";
import { ensurePrivateDir, isServerDataFile, narrowTree, setPrivateUmask } from "~/lib/server/private-dir.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { openEventStore } from "~/store/open.ts";

const usage = `usage: tapscope server
  Runs the Tapscope server (dashboard, API, event store) on PORT. Configured by environment variables only:
  PORT, PUBLIC_URL, DATA_DIR, DATABASE_URL (PostgreSQL; default PGlite in DATA_DIR), CLICKHOUSE_URL (default
  DuckDB in DATA_DIR), SESSION_SECRET, SMTP_URL, MAIL_FROM, GOOGLE_CLIENT_ID/SECRET, GITHUB_CLIENT_ID/SECRET,
  SUPPORT_EMAIL, INGEST_RATE_LIMIT, RETENTION_DAYS, PLAN_RETENTION, DOWNLOAD_DIR, MEMORY_LIMIT, DUCKDB_THREADS,
  TRUST_PROXY, ANONYMOUS_LINKS_PER_HOUR, MAX_WEBSOCKETS, WEBSOCKETS_PER_ADDRESS, WEBSOCKETS_PER_LINK,
  STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_PRICE_TEAM, STRIPE_PRICE_SCALE for billing, and CLICKHOUSE_CLUSTER,
  BROKER_URL for several nodes (see the self-hosting docs).`;

/** memoryLogMs: how often the memory line is logged (bench/soak asks for every 30 s). */
export async function main(args: string[], options: { memoryLogMs?: number } = {}): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (args.length > 0) {
    process.stderr.write(`tapscope server: unknown argument "${args[0]}" (configuration is by environment variables)\n${usage}\n`);
    return 2;
  }
  // Before anything is created: the secret (parseConfig), PGlite, DuckDB.
  setPrivateUmask();
  let config: Config;
  try {
    config = parseConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tapscope server: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  ensurePrivateDir(config.dataDir, (message) => log.warn(message));
  // Every socket and request is a descriptor: the soft limit goes up to the hard one (the WebSocket cap follows it).
  const descriptors = await raiseDescriptorLimit();
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: config.databaseUrl ? undefined : join(config.dataDir, "pglite"),
  });
  const store = await openEventStore(config);
  const narrowed = narrowTree(config.dataDir, isServerDataFile);
  if (narrowed > 0) log.info("made data files private to this user", { dataDir: config.dataDir, files: narrowed });
  let broker: Broker | undefined;
  if (config.brokerUrl) {
    try {
      broker = await connectRedisBroker(config.brokerUrl);
    } catch (err) {
      process.stderr.write(`tapscope server: BROKER_URL: could not connect (${errorMessage(err)})\n`);
      return 1;
    }
  }
  const runtime = createRuntime({
    config,
    db: database.db,
    store,
    broker,
    descriptorLimit: descriptors?.soft,
    isProcessServer: true,
  });
  await runtime.start();
  const app = createApp(runtime);
  // listen() (not a bare Bun.serve over app.handle) so the WebSocket routes (live view, publishers, link pings) upgrade.
  app.listen({ port: config.port, maxRequestBodySize: SERVER_BODY_LIMIT });
  const server = app.server!;
  log.info("tapscope server listening", {
    url: config.publicUrl,
    port: server.port,
    database: database.kind,
    eventStore: store.kind,
    cluster: runtime.cluster ? { node: runtime.cluster.nodeId, clickhouseCluster: config.clickhouseCluster ?? null } : undefined,
    dataDir: config.dataDir,
    memoryLimitBytes: config.memoryLimitBytes,
    descriptorLimit: descriptors?.soft ?? null,
    maxWebSockets: runtime.socketLimits.options.maxSockets,
  });

  // Once a minute, what the server holds against its budget: at debug level, or at warn once RSS passes 90 %.
  const { hub, attached } = runtime;
  const memoryTimer = setInterval(() => {
    const { rss, heapUsed, heapTotal } = process.memoryUsage();
    const buffered = attached?.sink.buffered();
    const fields = {
      rssBytes: rss,
      heapUsedBytes: heapUsed,
      heapTotalBytes: heapTotal,
      budgetBytes: config.memoryLimitBytes,
      storeBufferEvents: buffered?.events,
      storeBufferChars: buffered?.chars,
      storeAccepted: buffered?.accepted,
      storeWritten: buffered?.written,
      liveHistoryBytes: hub.retainedHistoryBytes,
      openSockets: server.pendingWebSockets,
      openWebSockets: runtime.socketLimits.open,
      liveSendBytes: hub.sendBudget.heldBytes,
      collections: runtime.memoryGuard?.collections,
    };
    if (rss > config.memoryLimitBytes * 0.9) log.warn("server memory near its budget (MEMORY_LIMIT)", fields);
    else log.debug("server memory", fields);
  }, options.memoryLogMs ?? 60_000);
  memoryTimer.unref();

  const { promise: stopped, resolve } = Promise.withResolvers<number>();
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    clearInterval(memoryTimer);
    // Stop accepting and let in-flight requests finish; WebSockets (publishers, viewers) never finish by
    // themselves, so after a short grace they are closed (publishers reconnect to the next server).
    await Promise.race([server.stop(false), Bun.sleep(3_000)]);
    await server.stop(true);
    await runtime.close(); // writes the events still batched
    await store.close();
    await database.close();
    resolve(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  return stopped;
}
