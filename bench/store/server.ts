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

/**
 * The real server (createApp, PGlite, ingest, store sink) on a loopback port, with one namespace and its token.
 * `ingestSteps`: what ingest makes of each event (all by default; bench/store/ingest-steps.ts leaves some out).
 */
export async function startBenchServer(store: SqlEventStore, ingestSteps?: { searchTexts?: boolean; routes?: boolean }) {
  setLogLevel("warn");
  const database = await openDatabase({});
  const config = parseConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-bench-store-")),
    SESSION_SECRET: "bench-store-secret-0123456789abcdef",
    PUBLIC_URL: "http://127.0.0.1:1",
  });
  const runtime = createRuntime({ config, db: database.db, store, ingestSteps });
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

export type PublishedThrough = {
  namespaceId: string;
  sent: number;
  publisherDropped: number;
  stored: number;
  storedWhilePublishing: number;
  sinkDropped: { store_error: number; overloaded: number };
  /** From the publisher's first send until the store sink settled every accepted event. */
  seconds: number;
  publishSeconds: number;
  /** This (server) process's CPU over `seconds`. */
  cpuSeconds: number;
};

/**
 * End to end from the publisher process's first send (it has generated its event pool and joined before it says
 * so) until the store sink has settled every accepted event: publisher copy/encode/send, WebSocket, ingest
 * validation, store sink and insert, on a server of its own over `store`. The CPU figure is this (server) process's
 * alone.
 */
export async function publishThrough(
  store: SqlEventStore,
  o: { rows: number; startMs: number; endMs: number; rate: number; ingestSteps?: { searchTexts?: boolean; routes?: boolean } },
): Promise<PublishedThrough> {
  const server = await startBenchServer(store, o.ingestSteps);
  const child = Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "publish-child.ts"),
      server.endpoint,
      server.token,
      String(o.rows),
      String(o.startMs * 1000),
      String(o.endMs * 1000),
      "1",
      String(o.rate),
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const lines = childLines(child.stdout);
  await lines.next(); // {"publishing":true}: the pool is generated, the clock starts
  const began = performance.now();
  const cpu0 = process.cpuUsage();
  const last = (await lines.next()).value ?? "{}";
  // The publisher has sent its last event: what is stored by now shows the rate kept up while it published.
  const publishedAt = performance.now();
  const storedWhilePublishing = server.sink.statsFor(server.namespaceId).written;
  await child.exited;
  const stats = JSON.parse(last) as { sent: number; dropped: number };
  const settled = () => {
    const st = server.sink.statsFor(server.namespaceId);
    return st.written + st.dropped.store_error + st.dropped.overloaded;
  };
  while (settled() < stats.sent) await Bun.sleep(20);
  const sinkStats = server.sink.statsFor(server.namespaceId);
  const seconds = (performance.now() - began) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await server.stop();
  return {
    namespaceId: server.namespaceId,
    sent: stats.sent,
    publisherDropped: stats.dropped,
    stored: await store.countAll(server.namespaceId),
    storedWhilePublishing,
    sinkDropped: sinkStats.dropped,
    seconds,
    publishSeconds: (publishedAt - began) / 1000,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

/** The child's stdout, line by line. */
async function* childLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    pending += decoder.decode(read.value, { stream: true });
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      yield pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
  }
  if (pending.trim()) yield pending;
}
