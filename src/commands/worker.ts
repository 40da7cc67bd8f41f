import { join, resolve } from "node:path";
import { startWorkerClient } from "~/agent/worker-client.ts";
import { errorMessage } from "~/lib/errors.ts";
import { parseAgentConfig } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { ensurePrivateDir, setPrivateUmask } from "~/lib/server/private-dir.ts";
import type { EventStore } from "~/store/types.ts";

const usage = `usage: tapscope worker --server URL --token ORG_WORKER_TOKEN [--clickhouse URL] [--data-dir DIR] [--retention-days N]
  Keeps an org's events on this machine: DuckDB in DIR (default ./tapscope-worker-data) or ClickHouse.
  The worker connects out to the server; the server sends it the org's events and queries.`;

function say(message: string): void {
  process.stderr.write(`tapscope worker: ${message}\n`);
}

const workerFlags = {
  server: { type: "string" },
  token: { type: "string" },
  clickhouse: { type: "string" },
  "data-dir": { type: "string" },
  "retention-days": { type: "string" },
  "heartbeat-ms": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export async function main(args: string[]): Promise<number> {
  const agent = parseAgentConfig();
  const parsed = parseFlags(args, workerFlags);
  if (!parsed.ok) return fail(parsed.error);
  const { flags } = parsed;
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const server = flags.server ?? agent.endpoint;
  const token = flags.token ?? agent.token;
  const clickhouse = flags.clickhouse;
  const dataDir = flags["data-dir"] ?? "./tapscope-worker-data";
  const retentionDays = Number(flags["retention-days"] ?? 30);
  const heartbeatMs = Number(flags["heartbeat-ms"] ?? 30_000);
  if (!token) return fail("an org worker token is needed: --token (or TAPSCOPE_TOKEN); create one under Tokens > Show advanced settings");
  if (!token.startsWith("tso_")) return fail("--token must be an org worker token (tso_...), not a namespace token");
  try {
    new URL(server);
  } catch {
    return fail(`--server must be a URL, got "${server}"`);
  }
  if (!Number.isInteger(retentionDays) || retentionDays < 1) return fail("--retention-days needs a whole number of days");

  setPrivateUmask();
  let store: EventStore;
  if (clickhouse) {
    const { openClickHouseStore } = await import("~/store/clickhouse.ts");
    store = await openClickHouseStore({ url: clickhouse });
  } else {
    const { openDuckDbStore } = await import("~/store/duckdb.ts");
    ensurePrivateDir(resolve(dataDir), say);
    store = await openDuckDbStore({
      path: join(resolve(dataDir), "events.duckdb"),
    });
  }
  say(`events stored in ${clickhouse ? "ClickHouse" : join(resolve(dataDir), "events.duckdb")}`);

  const retention = setInterval(() => void applyRetention(store, retentionDays), 3_600_000);
  void applyRetention(store, retentionDays);

  const { promise: stopped, resolve: stop } = Promise.withResolvers<string>();
  for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => stop(s));
  const client = startWorkerClient({
    server,
    token,
    store,
    heartbeatMs: Number.isInteger(heartbeatMs) && heartbeatMs >= 100 ? heartbeatMs : 30_000,
    onStatus: (status, detail) => say(status === "connected" ? `connected to ${server}` : `disconnected (${detail}); reconnecting`),
    onReplaced: () => {
      say("another worker connected for this org and took over; stopping");
      stop("replaced");
    },
  });
  const signal = await stopped;
  clearInterval(retention);
  client.stop();
  await store.close();
  if (signal === "replaced") return 1;
  return signal === "SIGINT" ? 130 : 0;
}

async function applyRetention(store: EventStore, days: number): Promise<void> {
  try {
    for (const ns of await store.listNamespaces()) await store.applyRetention(ns, days, Date.now());
  } catch (err) {
    say(`retention failed: ${errorMessage(err)}`);
  }
}

function fail(message: string): number {
  process.stderr.write(`tapscope worker: ${message}\n${usage}\n`);
  return 2;
}
