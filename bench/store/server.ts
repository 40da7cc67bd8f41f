import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { namespaces, namespaceTokens, orgs } from "#db/schema/index.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { setLogLevel } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { newToken } from "~/services/auth/token-format.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";

/** The real server (createApp, PGlite, ingest, store sink) on a loopback port, with one namespace and its token. */
export async function startBenchServer(store: SqlEventStore) {
  setLogLevel("warn");
  const database = await openDatabase({});
  const config = parseConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-bench-store-")),
    SESSION_SECRET: "bench-store-secret-0123456789abcdef",
    PUBLIC_URL: "http://127.0.0.1:1",
  });
  const runtime = createRuntime({ config, db: database.db, store });
  const attached = runtime.attached!;
  const app = createApp(runtime);
  app.listen({ port: 0, hostname: "127.0.0.1" });
  config.publicUrl = `http://127.0.0.1:${app.server?.port}`;
  const [org] = await database.db.insert(orgs).values({ name: "bench" }).returning();
  if (!org) throw new Error("no org");
  const [ns] = await database.db.insert(namespaces).values({ orgId: org.id, name: "bench" }).returning();
  if (!ns) throw new Error("no namespace");
  const { token, hash, suffix } = newToken("namespace");
  await database.db.insert(namespaceTokens).values({ namespaceId: ns.id, tokenHash: hash, suffix });
  return {
    endpoint: config.publicUrl,
    token,
    namespaceId: ns.id,
    sink: attached.sink,
    stop: async () => {
      await runtime.close();
      await app.stop(true);
      await database.close();
    },
  };
}
