import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type DuckDBConnection, DuckDBInstance, type DuckDBPreparedStatement } from "@duckdb/node-api";
import type { EventFields, StoredType } from "~/lib/protocol/event-fields.ts";
import { duckdbDialect } from "./sql/dialect.ts";
import { SqlEventStore } from "./sql-store.ts";
import { type EventRows, eventLayout, missingColumns, type StoreLayout, storeLayout } from "./table.ts";
import type { Engine, StoreLimits } from "./types.ts";

const duckType: Record<StoredType, string> = {
  int: "BIGINT",
  flag: "UTINYINT",
  string: "VARCHAR",
  json: "VARCHAR",
};

/** Connections handed out one task at a time, in order of asking. */
class Pool<T> {
  private readonly free: T[];
  private readonly waiters: Array<(item: T) => void> = [];

  constructor(readonly items: readonly T[]) {
    this.free = [...items];
  }

  async use<R>(task: (item: T) => Promise<R>): Promise<R> {
    const item = this.free.pop() ?? (await new Promise<T>((resolve) => this.waiters.push(resolve)));
    try {
      return await task(item);
    } finally {
      const next = this.waiters.shift();
      if (next) next(item);
      else this.free.push(item);
    }
  }
}

/** A connection that inserts, with its prepared INSERT per table (statements belong to their connection). */
type Inserter = { conn: DuckDBConnection; statements: Map<string, DuckDBPreparedStatement> };

/**
 * DuckDB, embedded: one database file in DATA_DIR, one table per namespace. Inserts run on their own connections,
 * a batch per statement, two at a time; DDL, deletes and drops go through the writer connection, each after
 * everything scheduled before it and before anything scheduled after it. Queries run on a small pool of reader
 * connections, each of which can be interrupted when its query outlives the timeout.
 */
class DuckDbEngine implements Engine {
  readonly kind = "duckdb" as const;
  readonly dialect = duckdbDialect;
  /** See duckdbInsertBatchSize. */
  readonly insertBatchSize = duckdbInsertBatchSize;
  private readonly readers: Pool<DuckDBConnection>;
  private readonly inserters: Pool<Inserter>;
  /** Settles when everything scheduled so far (inserts and the writer's tasks) has. */
  private everything: Promise<unknown> = Promise.resolve();
  /** Settles when the writer's tasks scheduled so far have: what an insert waits for. */
  private writerTasks: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    readers: DuckDBConnection[],
    inserters: DuckDBConnection[],
    readonly layout: StoreLayout,
  ) {
    this.readers = new Pool(readers);
    this.inserters = new Pool(inserters.map((conn) => ({ conn, statements: new Map() })));
  }

  /** DDL, deletes and drops: one at a time on the writer, after every insert and task scheduled before. */
  private write<T>(task: () => Promise<T>): Promise<T> {
    const next = this.everything.then(task, task);
    this.everything = this.writerTasks = next.catch(() => undefined);
    return next;
  }

  /**
   * An insert: after the writer's tasks scheduled before it (its table exists, a drop has happened), alongside other
   * inserts. Inserts of whole row groups do not conflict in DuckDB: each writes its own row groups to the file and
   * commits them; two at a time keep both cores busy while one batch's insert is waiting on the other's commit or
   * compression (10M events offered at 50,000/s: nothing dropped with two, 2.5 % dropped with one).
   */
  private append(task: (inserter: Inserter) => Promise<void>): Promise<void> {
    const next = this.writerTasks.then(() => this.inserters.use(task));
    const before = this.everything;
    this.everything = Promise.allSettled([before, next]);
    return next;
  }

  async createTable(table: string): Promise<void> {
    const cols = this.layout.columns
      .map((c) => `${c.name} ${duckType[c.type]} NOT NULL DEFAULT ${duckdbDialect.literal(c.fill)}`)
      .join(", ");
    await this.write(async () => {
      await this.writer.run(`CREATE TABLE IF NOT EXISTS ${table} (${cols})`);
      const result = await this.writer.runAndReadAll(
        `SELECT column_name FROM information_schema.columns WHERE table_catalog = '${eventsDatabase}' AND table_schema = 'main' AND table_name = '${table}'`,
      );
      const missing = missingColumns(
        result.getRowObjectsJS().map((r) => String(r.column_name)),
        this.layout,
      );
      for (const c of missing) {
        await this.writer.run(`ALTER TABLE ${table} ADD COLUMN ${c.name} ${duckType[c.type]} DEFAULT ${duckdbDialect.literal(c.fill)}`);
      }
      // A kept insert statement was prepared against the table before it had them.
      if (missing.length > 0) this.forgetInserts(table);
    });
  }

  insert(table: string, rows: readonly EventRows[]): Promise<void> {
    // Encoded before queueing: the next batch's text is built while DuckDB's threads store this one.
    const encoded = encode(rows, this.layout, () => defaultSeparator);
    return this.append(async (inserter) => {
      const stmt = await this.insertStatement(inserter, table);
      try {
        await run(stmt, encoded);
      } catch (err) {
        // A value holding the separator splits into one piece too many; the shorter columns are then padded
        // with NULL and the NOT NULL constraint refuses the batch. Rare: retry with separators that fit.
        const { isText } = this.layout;
        if (!isText.some((isTextColumn, i) => isTextColumn && rows.some((r) => hasSeparator(r.columns[i] as string[])))) throw err;
        await run(stmt, encode(rows, this.layout, separatorFor));
      } finally {
        // The kept statement would otherwise hold the batch's text (megabytes) until the table's next insert.
        stmt.clearBindings();
      }
    });
  }

  /** One prepared INSERT per table and connection, reused: preparing the 100-parameter statement costs about 1 ms. */
  private async insertStatement({ conn, statements }: Inserter, table: string): Promise<DuckDBPreparedStatement> {
    let stmt = statements.get(table);
    if (stmt) return stmt;
    stmt = await conn.prepare(insertSql(table, this.layout));
    if (statements.size >= maxPreparedInserts) forgetInsert(statements, statements.keys().next().value as string);
    statements.set(table, stmt);
    return stmt;
  }

  /** Only from the writer's tasks (no insert is running then). */
  private forgetInserts(table: string | null): void {
    for (const { statements } of this.inserters.items) {
      for (const name of table === null ? [...statements.keys()] : [table]) forgetInsert(statements, name);
    }
  }

  select(sql: string, options: { timeoutMs: number }): Promise<Record<string, unknown>[]> {
    return this.readers.use((conn) => this.selectOn(conn, sql, options));
  }

  private async selectOn(conn: DuckDBConnection, sql: string, options: { timeoutMs: number }): Promise<Record<string, unknown>[]> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      conn.interrupt();
    }, options.timeoutMs);
    try {
      const result = await conn.runAndReadAll(sql);
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
    }
  }

  async deleteOlderThan(table: string, cutoffMicros: number): Promise<void> {
    await this.write(() => this.writer.run(`DELETE FROM ${table} WHERE time < ${duckdbDialect.literal(cutoffMicros)}`));
  }

  async listTables(): Promise<string[]> {
    const result = await this.writer.runAndReadAll(
      `SELECT table_name FROM information_schema.tables WHERE table_catalog = '${eventsDatabase}' AND table_schema = 'main' AND table_name LIKE 'events\\_%' ESCAPE '\\'`,
    );
    return result.getRowObjectsJS().map((r) => String(r.table_name));
  }

  async dropTable(table: string): Promise<void> {
    await this.write(async () => {
      this.forgetInserts(table);
      await this.writer.run(`DROP TABLE IF EXISTS ${table}`);
    });
  }

  async close(): Promise<void> {
    await this.write(async () => this.forgetInserts(null));
    for (const { conn } of this.inserters.items) conn.closeSync();
    for (const conn of this.readers.items) conn.closeSync();
    this.writer.closeSync();
    this.instance.closeSync();
  }
}

/**
 * Rows per row group of the events database (DuckDB's default is 122,880), and events per insert. DuckDB writes a
 * committed insert of at least one whole row group straight to the database file, compressed, and skips the WAL;
 * anything smaller is appended to the WAL and compressed again at the next checkpoint, which stalls the writer
 * for a second or two. With the default row group that meant inserts of 122,880 events (2.5 s of events at
 * 50,000/s, and a column text of hundreds of megabytes per insert); with row groups of this size, each
 * full batch takes the direct path. Measured with bench/store/insert.ts and a 3.7M-row run of 30,720-event
 * inserts: 17-23 µs of CPU per event instead of 20-32, the slowest insert 0.6-1.0 s instead of 1.2-2.1 s (the
 * checkpoints), the file ~5 % larger (smaller row groups compress a little less). A multiple of DuckDB's
 * 2,048-row vector.
 */
export const duckdbRowGroupSize = 30_720;
export const duckdbInsertBatchSize = duckdbRowGroupSize;

/** The attached events database's name in SQL. */
const eventsDatabase = "tapscope_events";

/** Prepared inserts kept at most per connection (one per recently written namespace). */
const maxPreparedInserts = 64;

/** Inserts running at once (see DuckDbEngine.append). */
const insertConnections = 2;

function forgetInsert(statements: Map<string, DuckDBPreparedStatement>, table: string): void {
  statements.get(table)?.destroySync();
  statements.delete(table);
}

/**
 * Each column of a batch travels as one VARCHAR parameter: its values joined by a separator, split and
 * unnested by DuckDB (string_split + unnest zips the columns row by row). Numbers are joined by commas and
 * cast. About 100 native calls per batch and no escaping: cheaper on both sides than one JSON array per
 * column (JSON.stringify in JS, json_transform in DuckDB) and than the appender's ~50 calls per event.
 */
function insertSql(table: string, layout: StoreLayout): string {
  const values = layout.columns.map(({ name, type }, i) => {
    const split = `string_split($${2 * i + 1}::VARCHAR, $${2 * i + 2}::VARCHAR)`;
    return `unnest(${layout.isText[i] ? split : `${split}::${duckType[type]}[]`}) AS ${name}`;
  });
  return `INSERT INTO ${table} (${layout.columns.map((c) => c.name).join(", ")}) SELECT ${values.join(", ")}`;
}

/** Unit separator: absent from JSON text (JSON.stringify escapes control characters) and almost always from other text. */
const defaultSeparator = "\x1f";

/** Per column: the chunks' values joined, and the separator DuckDB splits them by. */
function encode(
  rows: readonly EventRows[],
  layout: StoreLayout,
  separatorOf: (values: string[][]) => string,
): Array<[text: string, separator: string]> {
  return layout.columns.map((_, i) => {
    const values = rows.map((r) => r.columns[i] as Array<number | string>);
    if (!layout.isText[i]) return [joinAll(values, ","), ","];
    const separator = separatorOf(values as string[][]);
    // Lone surrogates become U+FFFD, as the appender's UTF-8 conversion did. One check over the joined
    // column instead of one per value (the separator keeps halves of different values from pairing up).
    const text = joinAll(values, separator);
    return [text.isWellFormed() ? text : text.toWellFormed(), separator];
  });
}

function joinAll(chunks: ReadonlyArray<ReadonlyArray<number | string>>, separator: string): string {
  return chunks.length === 1
    ? (chunks[0] as Array<number | string>).join(separator)
    : chunks.map((values) => values.join(separator)).join(separator);
}

async function run(stmt: DuckDBPreparedStatement, encoded: ReadonlyArray<[string, string]>): Promise<void> {
  for (let i = 0; i < encoded.length; i++) {
    const [text, separator] = encoded[i] as [string, string];
    stmt.bindVarchar(2 * i + 1, text);
    stmt.bindVarchar(2 * i + 2, separator);
  }
  await stmt.run();
}

function hasSeparator(values: readonly string[]): boolean {
  return values.some((v) => v.includes(defaultSeparator));
}

/**
 * A separator no value contains: the unit separator, or a record separator followed by enough unit
 * separators. Its first character occurs only once in it, so a value's tail and the separator can't
 * form an earlier match.
 */
function separatorFor(chunks: readonly string[][]): string {
  if (!chunks.some(hasSeparator)) return defaultSeparator;
  let separator = `\x1e${defaultSeparator}`;
  while (chunks.some((values) => values.some((v) => v.includes(separator)))) separator += defaultSeparator;
  return separator;
}

export type DuckDbStoreOptions = {
  /** A file path, or ":memory:" for tests. */
  path: string;
  readers?: number;
  limits?: Partial<StoreLimits>;
  /** Rows per row group (default duckdbRowGroupSize; bench/store/insert.ts compares DuckDB's own 122,880). */
  rowGroupSize?: number;
  /** DuckDB's memory_limit in bytes (default: DuckDB's own, 80 % of RAM); beyond it, it spills to tempDirectory. */
  memoryLimitBytes?: number;
  threads?: number;
  /** Where DuckDB spills (default: beside the file, `<path>.tmp`). */
  tempDirectory?: string;
  /** The field table whose events it stores (default eventFields; tests give a table of their own). */
  fields?: EventFields;
};

export async function openDuckDbStore(options: DuckDbStoreOptions): Promise<SqlEventStore> {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  // A larger checkpoint threshold than the default 16 MB: checkpoints then write whole row groups instead
  // of recompressing a half-filled one after every few thousand events (measured: 2-3x ingest).
  const settings: Record<string, string> = { checkpoint_threshold: "256MB" };
  if (options.memoryLimitBytes) {
    settings.memory_limit = `${Math.floor(options.memoryLimitBytes / 1024)}KiB`;
    // Data not yet checkpointed is held in memory: at most half the limit.
    settings.checkpoint_threshold = `${Math.floor(Math.min(256 * 1024 * 1024, options.memoryLimitBytes / 2) / 1024)}KiB`;
  }
  if (options.threads) settings.threads = String(options.threads);
  const tempDirectory = options.tempDirectory ?? (options.path === ":memory:" ? undefined : `${options.path}.tmp`);
  if (tempDirectory) settings.temp_directory = tempDirectory;
  const instance = await DuckDBInstance.create(":memory:", settings);
  // The row group size is an option of ATTACH, not of the instance: the events database is attached (a file
  // written by earlier versions with the default size opens alike) and made every connection's default.
  const connect = async () => {
    const conn = await instance.connect();
    await conn.run(`USE ${eventsDatabase}`);
    return conn;
  };
  const setup = await instance.connect();
  await setup.run(
    `ATTACH ${duckdbDialect.literal(options.path)} AS ${eventsDatabase} (ROW_GROUP_SIZE ${options.rowGroupSize ?? duckdbRowGroupSize})`,
  );
  setup.closeSync();
  const writer = await connect();
  const readers: DuckDBConnection[] = [];
  for (let i = 0; i < (options.readers ?? 4); i++) readers.push(await connect());
  const inserters: DuckDBConnection[] = [];
  for (let i = 0; i < insertConnections; i++) inserters.push(await connect());
  const layout = options.fields ? storeLayout(options.fields) : eventLayout;
  return new SqlEventStore(new DuckDbEngine(instance, writer, readers, inserters, layout), options.limits);
}
