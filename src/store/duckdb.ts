import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { duckdbDialect } from "./sql/dialect.ts";
import { SqlEventStore } from "./sql-store.ts";
import { type ColumnKind, eventColumns } from "./table.ts";
import type { Engine, StoreLimits } from "./types.ts";

const duckType: Record<ColumnKind, string> = {
  int: "BIGINT",
  flag: "UTINYINT",
  string: "VARCHAR",
  json: "VARCHAR",
};

type Reader = { conn: DuckDBConnection; busy: boolean };

/**
 * DuckDB, embedded: one database file in DATA_DIR, one table per namespace. Inserts go through the
 * appender on a dedicated connection; queries run on a small pool of reader connections, each of which
 * can be interrupted when its query outlives the timeout.
 */
class DuckDbEngine implements Engine {
  readonly kind = "duckdb" as const;
  readonly dialect = duckdbDialect;
  private readonly readers: Reader[] = [];
  private readonly waiters: Array<(r: Reader) => void> = [];
  private writeChain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    readers: DuckDBConnection[],
  ) {
    for (const conn of readers) this.readers.push({ conn, busy: false });
  }

  /** Writes (DDL, appends, deletes) go one at a time through the writer connection. */
  private write<T>(task: () => Promise<T>): Promise<T> {
    const next = this.writeChain.then(task, task);
    this.writeChain = next.catch(() => undefined);
    return next;
  }

  async createTable(table: string): Promise<void> {
    const cols = eventColumns.map(([name, kind]) => `${name} ${duckType[kind]} NOT NULL`).join(", ");
    await this.write(() => this.writer.run(`CREATE TABLE IF NOT EXISTS ${table} (${cols})`));
  }

  insert(table: string, events: readonly TracedEvent[]): Promise<void> {
    return this.write(async () => {
      // Oldest first keeps the table roughly time-ordered, so min/max zone maps prune range scans.
      const sorted = [...events].sort((a, b) => a.time - b.time);
      // One JSON array per column, bound as one parameter each and unnested by DuckDB: 50 native calls per
      // batch instead of ~50 per event through the appender (measured: 38k -> 68k events per CPU-second).
      const stmt = await this.writer.prepare(insertSql(table));
      for (let i = 0; i < eventColumns.length; i++) {
        stmt.bindVarchar(i + 1, columnJson(sorted, eventColumns[i] as (typeof eventColumns)[number]));
      }
      await stmt.run();
    });
  }

  private acquire(): Promise<Reader> {
    const free = this.readers.find((r) => !r.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private releaseReader(r: Reader): void {
    const next = this.waiters.shift();
    if (next) {
      next(r);
      return;
    }
    r.busy = false;
  }

  async select(sql: string, options: { timeoutMs: number }): Promise<Record<string, unknown>[]> {
    const reader = await this.acquire();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reader.conn.interrupt();
    }, options.timeoutMs);
    try {
      const result = await reader.conn.runAndReadAll(sql);
      // Column-wise extraction then row objects: about 3x cheaper than getRowObjectsJS for a 10000-row page.
      const names = result.columnNames();
      const columns = result.getColumnsJS();
      const n = columns[0]?.length ?? 0;
      const rows = new Array<Record<string, unknown>>(n);
      for (let i = 0; i < n; i++) {
        const row: Record<string, unknown> = {};
        for (let j = 0; j < names.length; j++) row[names[j] as string] = columns[j]?.[i];
        rows[i] = row;
      }
      return rows;
    } catch (err) {
      if (timedOut) throw new Error("query timed out");
      throw err;
    } finally {
      clearTimeout(timer);
      this.releaseReader(reader);
    }
  }

  async deleteOlderThan(table: string, cutoffMicros: number): Promise<void> {
    await this.write(() => this.writer.run(`DELETE FROM ${table} WHERE time < ${duckdbDialect.literal(cutoffMicros)}`));
  }

  async listTables(): Promise<string[]> {
    const result = await this.writer.runAndReadAll(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_name LIKE 'events\\_%' ESCAPE '\\'",
    );
    return result.getRowObjectsJS().map((r) => String(r.table_name));
  }

  async dropTable(table: string): Promise<void> {
    await this.write(() => this.writer.run(`DROP TABLE IF EXISTS ${table}`));
  }

  async close(): Promise<void> {
    await this.writeChain;
    for (const r of this.readers) r.conn.closeSync();
    this.writer.closeSync();
    this.instance.closeSync();
  }
}

const insertSqlCache = new Map<string, string>();

function insertSql(table: string): string {
  let sql = insertSqlCache.get(table);
  if (sql) return sql;
  const values = eventColumns.map(
    ([name, kind], i) => `unnest(json_transform($${i + 1}::VARCHAR, '["${duckType[kind]}"]')) AS ${name}`,
  );
  sql = `INSERT INTO ${table} SELECT ${values.join(", ")}`;
  if (insertSqlCache.size > 10_000) insertSqlCache.clear();
  insertSqlCache.set(table, sql);
  return sql;
}

/**
 * One column of a batch as a JSON array. Strings are made well-formed first (lone surrogates become U+FFFD,
 * as N-API's UTF-8 conversion did for the appender), so JSON escapes can't carry unpaired halves.
 */
function columnJson(events: readonly TracedEvent[], [name, kind]: (typeof eventColumns)[number]): string {
  const values = new Array<unknown>(events.length);
  for (let i = 0; i < events.length; i++) {
    const v = (events[i] as TracedEvent)[name];
    switch (kind) {
      case "int":
        values[i] = Math.trunc(Number(v) || 0);
        break;
      case "flag":
        values[i] = v ? 1 : 0;
        break;
      case "json":
        values[i] = JSON.stringify(v ?? null).toWellFormed();
        break;
      default:
        values[i] = (typeof v === "string" ? v : String(v ?? "")).toWellFormed();
    }
  }
  return JSON.stringify(values);
}

export type DuckDbStoreOptions = {
  /** A file path, or ":memory:" for tests. */
  path: string;
  readers?: number;
  limits?: Partial<StoreLimits>;
};

export async function openDuckDbStore(options: DuckDbStoreOptions): Promise<SqlEventStore> {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  // A larger checkpoint threshold than the default 16 MB: checkpoints then write whole row groups instead
  // of recompressing a half-filled one after every few thousand events (measured: 2-3x ingest).
  const instance = await DuckDBInstance.create(options.path, { checkpoint_threshold: "256MB" });
  const writer = await instance.connect();
  const readers: DuckDBConnection[] = [];
  for (let i = 0; i < (options.readers ?? 4); i++) readers.push(await instance.connect());
  return new SqlEventStore(new DuckDbEngine(instance, writer, readers), options.limits);
}
