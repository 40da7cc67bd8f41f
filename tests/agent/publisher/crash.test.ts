import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { createPublisher } from "~/agent/publish.ts";
import { tableName } from "~/store/table.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { seedNamespaceToken, spawnServer } from "../../support/server-process.ts";

async function storedCount(dataDir: string, namespaceId: string): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  try {
    await conn.run(`ATTACH '${join(dataDir, "events.duckdb")}' AS ev`);
    const tables = await conn.runAndReadAll(
      `SELECT count(*)::INTEGER FROM duckdb_tables() WHERE database_name = 'ev' AND table_name = '${tableName(namespaceId)}'`,
    );
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
    const { namespaceId, token } = await seedNamespaceToken(dataDir, "crash");
    const server = await spawnServer({ dataDir, keepDataDir: true });
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
    const stored = await storedCount(dataDir, namespaceId);
    expect(stored).toBe(acked);
    expect(stats.sent + stats.dropped).toBe(3000);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 60_000);
