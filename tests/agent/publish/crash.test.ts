import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { openDatabase } from "#db/client.ts";
import { namespaces, namespaceTokens, orgs } from "#db/schema/index.ts";
import { createPublisher } from "~/agent/publish.ts";
import { newToken } from "~/services/auth/token-format.ts";
import { tableName } from "~/store/table.ts";
import { sampleEvent } from "./server.ts";

const root = join(import.meta.dir, "../../..");

/** The real CLI (`bun src/main.ts server`) on dataDir, on a port chosen up front (PUBLIC_URL names it). */
async function startServer(dataDir: string) {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const proc = Bun.spawn([process.execPath, "src/main.ts", "server"], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATABASE_URL: "", CLICKHOUSE_URL: "" },
    stdout: "ignore",
    stderr: "pipe",
  });
  let log = "";
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    log += decoder.decode(chunk.value);
    if (log.includes("tapscope server listening")) {
      reader.releaseLock();
      return { proc, endpoint: `http://127.0.0.1:${port}` };
    }
  }
  throw new Error(`server did not start:\n${log}`);
}

async function storedCount(dataDir: string, namespaceId: string): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  try {
    await conn.run(`ATTACH '${join(dataDir, "events.duckdb")}' AS ev`);
    const tables = await conn.runAndReadAll(`SELECT count(*)::INTEGER FROM duckdb_tables() WHERE database_name = 'ev' AND table_name = '${tableName(namespaceId)}'`);
    if (Number(tables.getRows()[0]?.[0]) === 0) return 0;
    const reader = await conn.runAndReadAll(`SELECT count(*)::INTEGER FROM ev.${tableName(namespaceId)}`);
    return Number(reader.getRows()[0]?.[0]);
  } finally {
    conn.closeSync();
  }
}

test("events the server acknowledged survive kill -9: an ack means stored, the rest the CLI counts as dropped", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-crash-"));
  try {
    const database = await openDatabase({ pgliteDir: join(dataDir, "pglite") });
    const [org] = await database.db.insert(orgs).values({ name: "crash" }).returning();
    const [ns] = await database.db.insert(namespaces).values({ orgId: org!.id, name: "crash" }).returning();
    const { token, hash, suffix } = newToken("namespace");
    await database.db.insert(namespaceTokens).values({ namespaceId: ns!.id, tokenHash: hash, suffix });
    await database.close();

    const server = await startServer(dataDir);
    const publisher = createPublisher({ endpoint: server.endpoint, token });
    await publisher.join();
    // Fewer than one store batch: before, they were acknowledged at once and waited up to a second for the insert.
    for (let i = 0; i < 3000; i++) publisher.send(sampleEvent());
    publisher.flush();
    const deadline = Date.now() + 20_000;
    while (publisher.stats().sent < 3000 && Date.now() < deadline) await Bun.sleep(1);
    const acked = publisher.stats().sent;
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    const stats = await publisher.close(1000);
    expect(acked).toBe(3000);

    // What the restarted server finds on the same DATA_DIR (the store replays its log as it opens).
    const stored = await storedCount(dataDir, ns!.id);
    expect(stored).toBe(acked);
    expect(stats.sent + stats.dropped).toBe(3000);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 60_000);
