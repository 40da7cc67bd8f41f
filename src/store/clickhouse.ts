import { Readable } from "node:stream";
import { type ClickHouseClient, createClient } from "@clickhouse/client";
import type { EventFields, StoredType } from "~/lib/protocol/event-fields.ts";
import { clickhouseDialect, clickhouseScanDialect, type Dialect } from "./sql/dialect.ts";
import {
  backfillSql,
  backfillStepMicros,
  deleteBeforeSql,
  eventHoursSql,
  refillCutoffMinuteSql,
  rollupStatements,
  rollupTable,
  rollupView,
} from "./sql/endpoint-rollup.ts";
import { SqlEventStore } from "./sql-store.ts";
import { type EventRows, eventLayout, missingColumns, type StoreLayout, storeLayout } from "./table.ts";
import type { Engine, StoreLimits } from "./types.ts";

const chType: Record<StoredType, string> = {
  int: "Int64",
  flag: "UInt8",
  string: "String",
  json: "String",
};
const lit = clickhouseDialect.literal;
/** How long a delete may take to be applied everywhere before it fails (and the retention job tries again next run). */
const deleteTimeoutMs = 120_000;

/** TTL clauses on MergeTree tables arrived in ClickHouse 19.6; older servers (Debian's 18.16) delete on a schedule. */
export function supportsTtl(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major > 19 || (major === 19 && minor >= 6);
}

/**
 * A pooled keep-alive socket the server already closed (18.16 drops idle connections after 3 s) fails with
 * ECONNRESET before the request was read; one retry on a fresh socket is safe then.
 */
function isStaleSocket(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return e?.code === "ECONNRESET" || /socket hang up/i.test(e?.message ?? "");
}

async function retryStale<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await task();
  } catch (err) {
    if (!isStaleSocket(err)) throw err;
    return task();
  }
}

/** What TabSeparated must escape inside a value: its delimiters, the escape character, CR and NUL. */
const tsvSpecial = /[\\\t\n\r\0]/;
const tsvSpecials = /[\\\t\n\r\0]/g;
const tsvEscapes: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0" };

function tsvText(s: string): string {
  return tsvSpecial.test(s) ? s.replace(tsvSpecials, (c) => tsvEscapes[c] as string) : s;
}

/**
 * A batch as TabSeparated text: no keys per row (JSONEachRow repeated all 50 names per event) and the
 * cheapest format for the server to parse. Lone surrogates become U+FFFD, once for the whole batch (JSON
 * text escapes its own, so JSON columns keep them as before).
 */
function tabSeparated(chunks: readonly EventRows[]): string {
  const lines: string[] = [];
  const fields = new Array<string | number>(chunks[0]?.columns.length ?? 0);
  for (const { count, columns } of chunks) {
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < fields.length; j++) {
        const v = (columns[j] as Array<number | string>)[i] as number | string;
        fields[j] = typeof v === "number" ? v : tsvText(v);
      }
      lines.push(fields.join("\t"));
    }
  }
  lines.push("");
  const text = lines.join("\n");
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * Where a namespace's rows live. One server: the table itself. A cluster (CLICKHOUSE_CLUSTER): a local MergeTree table
 * `<table>_local` on every shard (ReplicatedMergeTree where a shard has replicas) and the Distributed table `<table>`
 * over them, sharded by event id; everything reads and writes through the Distributed table, DDL runs ON CLUSTER
 * (ClickHouse's distributed DDL queue, which lives in ZooKeeper). ADR 0021.
 */
export type ClusterLayout = { name: string; replicated: boolean };

export function localTable(table: string, cluster: ClusterLayout | undefined): string {
  return cluster ? `${table}_local` : table;
}

/** Data skipping indexes are generally available from 20.1 (19.x had them behind a setting; 18.16 has none). */
export function supportsSkipIndexes(version: string): boolean {
  const [major = 0] = version.split(".").map(Number);
  return major >= 20;
}

/**
 * The skip indexes of the search columns (ADR 0032), where the server has them: an n-gram bloom filter per granule on
 * each body's text, which lets a `LIKE '%needle%'` skip granules that cannot hold the needle, and a token bloom filter
 * on each side's header lines, which an exact header search (`\nname: value\n`, whole tokens) uses.
 */
export function searchIndexes(stored: StoreLayout): string[] {
  const has = (name: string) => stored.columns.some((c) => c.name === name);
  const bodies = ["search_req_body", "search_resp_body"].filter(has);
  const headers = ["search_req_headers", "search_resp_headers"].filter(has);
  return [
    ...bodies.map((c) => `INDEX ${c}_ngrams ${c} TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1`),
    ...headers.map((c) => `INDEX ${c}_tokens ${c} TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1`),
  ];
}

/**
 * The DDL that makes a namespace's table: one statement on one server, two on a cluster (the shards' local tables,
 * then the Distributed table over them). `hasSkipIndexes`: the server has data skipping indexes (searchIndexes).
 */
export function createTableStatements(
  table: string,
  cluster: ClusterLayout | undefined,
  stored: StoreLayout = eventLayout,
  hasSkipIndexes = false,
): string[] {
  const eventCols = stored.columns.map((c) => `${c.name} ${chType[c.type]} DEFAULT ${lit(c.fill)}`);
  const cols = [...eventCols, ...(hasSkipIndexes ? searchIndexes(stored) : [])];
  cols.splice(1, 0, "ts DateTime MATERIALIZED toDateTime(intDiv(time, 1000000))");
  const layout = "PARTITION BY toDate(ts) ORDER BY time SETTINGS index_granularity = 8192";
  if (!cluster) return [`CREATE TABLE IF NOT EXISTS ${table} (${cols.join(", ")}) ENGINE = MergeTree ${layout}`];
  const local = localTable(table, cluster);
  const on = `ON CLUSTER ${cluster.name}`;
  const engine = cluster.replicated ? `ReplicatedMergeTree('/clickhouse/tables/{shard}/tapscope/${local}', '{replica}')` : "MergeTree";
  return [
    `CREATE TABLE IF NOT EXISTS ${local} ${on} (${cols.join(", ")}) ENGINE = ${engine} ${layout}`,
    // The event columns only: 18.16's Distributed table forwards a MATERIALIZED column on insert and the shard refuses it.
    `CREATE TABLE IF NOT EXISTS ${table} ${on} (${eventCols.join(", ")}) ENGINE = Distributed(${cluster.name}, currentDatabase(), ${local}, sipHash64(event_id))`,
  ];
}

/**
 * ClickHouse over HTTP. The DDL and SQL stay within what 18.16 understands and current releases still
 * accept: MergeTree PARTITION BY toDate(DateTime) ORDER BY time; time as Int64 microseconds (no
 * DateTime64); no query parameters (values are escaped literals); settings per query.
 */
class ClickHouseEngine implements Engine {
  readonly kind = "clickhouse" as const;
  /** Filtered counts keep their condition in WHERE where there are no skip indexes (dialect.ts). */
  readonly dialect: Dialect;
  readonly hasEndpointRollup = true;
  /**
   * ClickHouse makes a part per insert: 20,000 rows per insert cost its server about a third of the CPU per event
   * that 5,000 did (bench/store/insert.ts).
   */
  readonly insertBatchSize = 20_000;
  private readonly ttlDays = new Map<string, number>();
  /** What an insert names: a table may hold columns this server does not know (a newer one added them; they take their defaults). */
  private readonly columnNames: [string, ...string[]];

  constructor(
    private readonly client: ClickHouseClient,
    readonly version: string,
    readonly layout: StoreLayout,
    private readonly cluster?: ClusterLayout,
  ) {
    this.columnNames = layout.columns.map((c) => c.name) as [string, ...string[]];
    this.dialect = supportsSkipIndexes(version) ? clickhouseDialect : clickhouseScanDialect;
  }

  get hasTtl(): boolean {
    return supportsTtl(this.version);
  }

  /** ON CLUSTER waits for every shard; one that is down fails the statement after this, and runs it when it is back. */
  private async command(sql: string): Promise<void> {
    await retryStale(() =>
      this.client.command({ query: sql, clickhouse_settings: this.cluster ? { distributed_ddl_task_timeout: "30" } : undefined }),
    );
  }

  /** An INSERT ... SELECT inside the server; through a Distributed table, on the shards before it returns. */
  private async insertSelect(sql: string): Promise<void> {
    await this.client.command({ query: sql, clickhouse_settings: this.cluster ? { insert_distributed_sync: 1 } : undefined });
  }

  private get onCluster(): string {
    return this.cluster ? ` ON CLUSTER ${this.cluster.name}` : "";
  }

  async createTable(table: string): Promise<void> {
    const hasSkipIndexes = supportsSkipIndexes(this.version);
    for (const sql of createTableStatements(table, this.cluster, this.layout, hasSkipIndexes)) await this.command(sql);
    // Columns added since the table was made (18.16 has no ADD COLUMN IF NOT EXISTS): the shards' tables first.
    const tables = this.cluster ? [localTable(table, this.cluster), table] : [table];
    for (const name of tables) {
      const existing = await this.select(`SELECT name FROM system.columns WHERE database = currentDatabase() AND table = ${lit(name)}`, {
        timeoutMs: 10_000,
        queryId: "",
      });
      for (const c of missingColumns(
        existing.map((r) => String(r.name)),
        this.layout,
      )) {
        await this.command(`ALTER TABLE ${name}${this.onCluster} ADD COLUMN ${c.name} ${chType[c.type]} DEFAULT ${lit(c.fill)}`);
      }
    }
    if (hasSkipIndexes) await this.addSearchIndexes(localTable(table, this.cluster));
    await this.addRollup(table);
  }

  /**
   * The Endpoints rollup (sql/endpoint-rollup.ts) of a table that has none yet, then the events stored before it, rolled
   * up once, an hour at a time. The view is made without IF NOT EXISTS: of two servers making it at once, only the one
   * that made it backfills (the other's statement fails as already done), so no event is rolled up twice that way.
   */
  private async addRollup(table: string): Promise<void> {
    const view = rollupView(table);
    const found = await this.select(`SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = ${lit(view)}`, {
      timeoutMs: 10_000,
      queryId: "",
    });
    if (Number(found[0]?.n ?? 0) > 0) return;
    const statements = rollupStatements(table, localTable(table, this.cluster), this.cluster);
    const makeView = (statements.pop() as string).replace("CREATE MATERIALIZED VIEW IF NOT EXISTS", "CREATE MATERIALIZED VIEW");
    for (const sql of statements) await this.command(sql);
    const beforeMicros = Date.now() * 1000;
    try {
      await this.command(makeView);
    } catch (err) {
      if (/already exists/i.test(String((err as Error)?.message ?? err))) return;
      throw err;
    }
    const hours = await this.select(eventHoursSql(table), { timeoutMs: 60_000, queryId: "" });
    for (const { hour } of hours) {
      if (Number(hour) * backfillStepMicros < beforeMicros) await this.insertSelect(backfillSql(table, Number(hour), beforeMicros));
    }
  }

  /** A table made before its search indexes gets them; parts written before keep being read whole (no MATERIALIZE). */
  private async addSearchIndexes(local: string): Promise<void> {
    const existing = await this.select(
      `SELECT name FROM system.data_skipping_indices WHERE database = currentDatabase() AND table = ${lit(local)}`,
      { timeoutMs: 10_000, queryId: "" },
    );
    const have = new Set(existing.map((r) => String(r.name)));
    for (const index of searchIndexes(this.layout)) {
      const name = index.split(" ")[1] ?? "";
      if (!have.has(name)) await this.command(`ALTER TABLE ${local}${this.onCluster} ADD ${index}`);
    }
  }

  async insert(table: string, rows: readonly EventRows[]): Promise<void> {
    await this.client.insert({
      table,
      values: Readable.from([tabSeparated(rows)], { objectMode: false }),
      format: "TabSeparated",
      columns: this.columnNames,
      // Through a Distributed table, written to the shards before the insert returns: an ack means stored (ADR 0012).
      clickhouse_settings: this.cluster ? { insert_distributed_sync: 1 } : undefined,
    });
  }

  async select(sql: string, options: { timeoutMs: number; queryId: string }): Promise<Record<string, unknown>[]> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error("query timed out")), options.timeoutMs + 1000);
    try {
      const result = await retryStale(() =>
        this.client.query({
          query: sql,
          format: "JSON",
          abort_signal: abort.signal,
          clickhouse_settings: {
            max_execution_time: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
            output_format_json_quote_64bit_integers: 0,
          },
        }),
      );
      const body = await result.json<Record<string, unknown>>();
      return body.data;
    } catch (err) {
      if (abort.signal.aborted) throw new Error("query timed out");
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Native TTL where the server has it (set once per value); the retention job calls this each run. */
  async setTtl(table: string, days: number): Promise<boolean> {
    if (!this.hasTtl) return false;
    if (this.ttlDays.get(table) === days) return true;
    await this.command(
      `ALTER TABLE ${localTable(table, this.cluster)}${this.onCluster} MODIFY TTL ts + INTERVAL ${lit(Math.floor(days))} DAY`,
    );
    // The rollup's minutes go with their events' day (a minute's states at most its last second after its first event).
    await this.command(
      `ALTER TABLE ${localTable(rollupTable(table), this.cluster)}${this.onCluster} MODIFY TTL toDateTime(intDiv(minute, 1000000)) + INTERVAL ${lit(Math.floor(days))} DAY`,
    );
    this.ttlDays.set(table, days);
    return true;
  }

  async deleteOlderThan(distributed: string, cutoffMicros: number): Promise<void> {
    // On a cluster the rows are in the shards' local tables: the partitions this shard has (sharded by id, every shard
    // has every day's) go ON CLUSTER, and so does the mutation, which every shard must have applied before this returns.
    const table = localTable(distributed, this.cluster);
    const rollup = localTable(rollupTable(distributed), this.cluster);
    // Whole days well before the cutoff go by partition (cheap), from the events and their rollup alike; the rest by a
    // mutation we wait for.
    const cutoffDay = Math.floor(cutoffMicros / 86_400_000_000) - 1;
    await this.dropDaysBefore(table, cutoffDay);
    await this.dropDaysBefore(rollup, cutoffDay);
    await this.command(`ALTER TABLE ${table}${this.onCluster} DELETE WHERE time < ${lit(cutoffMicros)}`);
    // The rollup's minutes up to the cutoff's go, and that minute's kept events are rolled up again once the delete is
    // applied (a part inserted after a mutation was made is not touched by it).
    await this.command(deleteBeforeSql(rollup, this.onCluster, cutoffMicros));
    await this.mutationsDone(table);
    await this.mutationsDone(rollup);
    await this.insertSelect(refillCutoffMinuteSql(distributed, cutoffMicros));
  }

  /** Drops the day partitions of `table` (a local table) before `cutoffDay` (days since 1970). */
  private async dropDaysBefore(table: string, cutoffDay: number): Promise<void> {
    const parts = await this.client.query({
      query: `SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() AND table = ${lit(table)} AND active`,
      format: "JSONEachRow",
    });
    for (const { partition } of await parts.json<{ partition: string }>()) {
      const day = Date.parse(`${partition.replaceAll("'", "")}T00:00:00Z`) / 86_400_000;
      if (Number.isFinite(day) && day < cutoffDay) {
        await this.command(`ALTER TABLE ${table}${this.onCluster} DROP PARTITION ${lit(partition.replaceAll("'", ""))}`);
      }
    }
  }

  /**
   * A mutation runs in the background and ON CLUSTER returns once each shard has queued it, so a delete is done when no
   * shard has one pending: each shard's system.mutations, read through cluster() (one replica per shard; the others
   * apply it as they replicate, as they do inserts). 18.16 has no mutations_sync.
   */
  private async mutationsDone(table: string): Promise<void> {
    const database = await this.database();
    const mutations = this.cluster ? `cluster(${lit(this.cluster.name)}, system, mutations)` : "system.mutations";
    const deadline = Date.now() + deleteTimeoutMs;
    for (;;) {
      const pending = await this.select(
        `SELECT count() AS n FROM ${mutations} WHERE database = ${lit(database)} AND table = ${lit(table)} AND is_done = 0`,
        { timeoutMs: 10_000, queryId: "" },
      );
      if (Number(pending[0]?.n ?? 0) === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `deleting events older than the cutoff from ${table}: not applied on every shard within ${deleteTimeoutMs / 1000} s`,
        );
      }
      await Bun.sleep(100);
    }
  }

  private databaseName: string | undefined;
  /** The database the tables are in (the same on every shard: the Distributed table names it). */
  private async database(): Promise<string> {
    this.databaseName ??= String((await this.select("SELECT currentDatabase() AS db", { timeoutMs: 10_000, queryId: "" }))[0]?.db);
    return this.databaseName;
  }

  async listTables(): Promise<string[]> {
    const rows = await this.select("SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'events\\\\_%'", {
      timeoutMs: 10_000,
      queryId: "",
    });
    return rows.map((r) => String(r.name));
  }

  async dropTable(table: string): Promise<void> {
    // The view first, so no insert reaches a rollup that is going.
    await this.command(`DROP TABLE IF EXISTS ${rollupView(table)}${this.onCluster}`);
    const rollup = rollupTable(table);
    await this.command(`DROP TABLE IF EXISTS ${rollup}${this.onCluster}`);
    if (this.cluster) await this.command(`DROP TABLE IF EXISTS ${localTable(rollup, this.cluster)}${this.onCluster}`);
    await this.command(`DROP TABLE IF EXISTS ${table}${this.onCluster}`);
    if (this.cluster) await this.command(`DROP TABLE IF EXISTS ${localTable(table, this.cluster)}${this.onCluster}`);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export type ClickHouseStoreOptions = {
  url: string;
  /** CLICKHOUSE_CLUSTER: a cluster of this server's remote_servers. */
  cluster?: string;
  limits?: Partial<StoreLimits>;
  /** The field table whose events it stores (default eventFields; tests give a table of their own). */
  fields?: EventFields;
};

export async function openClickHouseStore(options: ClickHouseStoreOptions): Promise<SqlEventStore> {
  const client = createClient({
    url: options.url,
    compression: { request: false, response: true },
    // No pooled sockets: ClickHouse closes idle ones after keep_alive_timeout (3 s), and when the event loop
    // lags (a busy server) the client reuses one the server has closed; a fresh connection per request avoids it.
    keep_alive: { enabled: false },
  });
  const result = await client.query({
    query: "SELECT version() AS v",
    format: "JSONEachRow",
  });
  const [row] = await result.json<{ v: string }>();
  const cluster = options.cluster ? await clusterLayout(client, options.cluster) : undefined;
  const layout = options.fields ? storeLayout(options.fields) : eventLayout;
  return new SqlEventStore(new ClickHouseEngine(client, row?.v ?? "0", layout, cluster), options.limits);
}

/** The named cluster as this server knows it: refused when it is not in remote_servers; replicated when a shard has replicas. */
async function clusterLayout(client: ClickHouseClient, name: string): Promise<ClusterLayout> {
  const result = await client.query({
    query: `SELECT count() AS hosts, max(replica_num) AS replicas FROM system.clusters WHERE cluster = ${lit(name)}`,
    format: "JSONEachRow",
  });
  const [row] = await result.json<{ hosts: number | string; replicas: number | string }>();
  if (!row || Number(row.hosts) === 0) {
    throw new Error(`CLICKHOUSE_CLUSTER: ClickHouse has no cluster "${name}" in its remote_servers`);
  }
  return { name, replicated: Number(row.replicas) > 1 };
}
