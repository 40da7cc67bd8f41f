import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { ConfigError, parseConfig } from "~/lib/server/env.ts";
import { openEventStore } from "~/store/open.ts";
import type { Engine } from "~/store/types.ts";

const base = { SESSION_SECRET: "memory-limit-test-secret-0123456789" };

test("MEMORY_LIMIT: 1 GiB or a quarter of RAM by default, sizes with units, a clear error otherwise", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-memlimit-"));
  try {
    expect(parseConfig({ ...base, DATA_DIR: dataDir }).memoryLimitBytes).toBe(Math.min(1024 ** 3, Math.floor(totalmem() / 4)));
    expect(parseConfig({ ...base, DATA_DIR: dataDir, MEMORY_LIMIT: "2GiB" }).memoryLimitBytes).toBe(2 * 1024 ** 3);
    expect(parseConfig({ ...base, DATA_DIR: dataDir, MEMORY_LIMIT: "512MiB" }).memoryLimitBytes).toBe(512 * 1024 ** 2);
    expect(() => parseConfig({ ...base, DATA_DIR: dataDir, MEMORY_LIMIT: "lots" })).toThrow(ConfigError);
    expect(() => parseConfig({ ...base, DATA_DIR: dataDir, MEMORY_LIMIT: "1MiB" })).toThrow(
      "MEMORY_LIMIT must be a size of at least 128MiB",
    );
    const threads = parseConfig({ ...base, DATA_DIR: dataDir }).duckdbThreads;
    expect(threads).toBeGreaterThanOrEqual(1);
    expect(threads).toBeLessThanOrEqual(4);
    expect(parseConfig({ ...base, DATA_DIR: dataDir, DUCKDB_THREADS: "3" }).duckdbThreads).toBe(3);
    expect(() => parseConfig({ ...base, DATA_DIR: dataDir, DUCKDB_THREADS: "0" })).toThrow("DUCKDB_THREADS");
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("the server's DuckDB gets a quarter of the budget as its memory_limit, the thread count, and spills under DATA_DIR", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-memlimit-"));
  const config = parseConfig({ ...base, DATA_DIR: dataDir, MEMORY_LIMIT: "512MiB", DUCKDB_THREADS: "2" });
  const store = await openEventStore(config);
  try {
    // The engine is private to the store; its settings are what this test is about.
    const engine = (store as unknown as { engine: Engine }).engine;
    const [row] = await engine.select(
      "SELECT current_setting('memory_limit') AS m, current_setting('threads')::INTEGER AS t, current_setting('temp_directory') AS d",
      { timeoutMs: 5000, queryId: "settings" },
    );
    expect(String(row?.m)).toMatch(/^128(\.0)? ?MiB$/);
    expect(Number(row?.t)).toBe(2);
    expect(String(row?.d)).toBe(join(dataDir, "duckdb-tmp"));
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
