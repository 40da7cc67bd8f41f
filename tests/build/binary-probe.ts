/**
 * Compiled by binary.test.ts with scripts/build.ts's options and embedding: proves @duckdb/node-api works
 * inside a binary once loadDuckDbNative() has run (the store's own tests cover DuckDB from source), and
 * that the binary does not load a .env from its working directory.
 */
import { loadDuckDbNative } from "~/lib/server/embedded.ts";

await loadDuckDbNative();
const { DuckDBInstance } = await import("@duckdb/node-api");
const instance = await DuckDBInstance.create(":memory:");
const conn = await instance.connect();
await conn.run("CREATE TABLE events (t BIGINT, path VARCHAR)");
await conn.run("INSERT INTO events VALUES (1, '/a'), (2, '/b')");
const result = await conn.runAndReadAll("SELECT count(*)::INTEGER AS n, arg_max(path, t) AS newest FROM events");
const [row] = result.getRowObjects();
console.log(`duckdb: ${row?.n} events, newest ${row?.newest}`);
conn.closeSync();
console.log(`dotenv: ${process.env.TAPSCOPE_PROBE ?? "not loaded"}`);
