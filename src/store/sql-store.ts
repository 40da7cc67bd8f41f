import { randomUUID } from "node:crypto";
import { AppError, errorMessage, toError } from "~/lib/errors.ts";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import {
  type EndpointsQuery,
  type EndpointsResult,
  type EventDetail,
  endpointLimits,
  type HistogramBucket,
  type HistogramQuery,
  type HistogramResult,
  maxRowLimit,
  maxRowOffset,
  type ResultRow,
  type RowColumn,
  type RowSort,
  type RowsQuery,
  type RowsResult,
  rowSortKeys,
  type TimestampFilter,
} from "~/lib/protocol/query.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { bucketGrid } from "~/lib/time/buckets.ts";
import { NamespaceGate } from "./guard.ts";
import { searchColumns } from "./search-text.ts";
import { checkRange, compileWhere, toMicros } from "./sql/compile.ts";
import type { Dialect } from "./sql/dialect.ts";
import { rollupEndpointsSql, rollupSliceCountsSql, rollupSparklineSql } from "./sql/endpoint-rollup.ts";
import { endpointKey, endpointsSql, latencySql, planEndpoints, sparklineSql, toEndpointRow } from "./sql/endpoints.ts";
import { type StoredOnceColumn, storedOnceColumns } from "./stored-body.ts";
import { type EventRows, fromStored, namespaceIdOfTable, rowToEvent, type StoreLayout, tableName, toEventRows } from "./table.ts";
import { defaultStoreLimits, type Engine, type EventStore, type StoreLimits } from "./types.ts";

/** At least this many slices of the range are counted to find the window holding the newest rows. */
const windowSlices = 512;

/** Per-slice counts of one filtered scan: the histogram's buckets and the page's total + window come from it. */
type SliceCounts = {
  startMicros: number;
  stepMicros: number;
  perBucket: number;
  slices: { s: number; n: number; e5: number; e4: number }[];
};

function toRow(raw: Record<string, unknown>, columns: readonly RowColumn[], layout: StoreLayout): ResultRow {
  const row: Record<string, unknown> = {};
  for (const name of columns) row[name] = fromStored(layout.typeOf.get(name) ?? "string", raw[name]);
  return row as ResultRow;
}

/** The requested row columns, whitelisted, in table order, always with the time and the event id. */
function selectedColumns(requested: unknown, layout: StoreLayout): RowColumn[] {
  const { rowColumns, time, id } = layout.fields;
  if (requested === undefined) return [...rowColumns] as RowColumn[];
  if (!Array.isArray(requested) || requested.length > rowColumns.length) {
    throw new AppError("BAD_REQUEST", "columns must be a list of row columns");
  }
  for (const c of requested) {
    if (!rowColumns.includes(c)) throw new AppError("BAD_REQUEST", "unknown column");
  }
  return rowColumns.filter((c) => c === time.name || c === id.name || requested.includes(c)) as RowColumn[];
}

/** The query's sort, checked: a whitelisted column and a direction, newest first when absent. */
function sortOf(sort: unknown): RowSort {
  if (sort === undefined) return { key: "time", dir: "desc" };
  const s = (typeof sort === "object" && sort !== null ? sort : {}) as Record<string, unknown>;
  if (!(rowSortKeys as readonly unknown[]).includes(s.key) || (s.dir !== "asc" && s.dir !== "desc")) {
    throw new AppError("BAD_REQUEST", `sort must be one of ${rowSortKeys.join(", ")}, asc or desc`);
  }
  return { key: s.key as RowSort["key"], dir: s.dir };
}

/**
 * Rows at or before (column value, time) in the sort's order: `(k, time) <= (v, t)` ascending, `>=` descending, spelled
 * without tuple comparison, which the engines write differently.
 */
function beforeOrAt(d: Dialect, sort: RowSort, value: unknown, timeMicros: unknown, layout: StoreLayout): string {
  const v = layout.typeOf.get(sort.key) === "string" ? d.literal(String(value)) : d.literal(Number(value));
  const t = d.literal(Number(timeMicros));
  const op = sort.dir === "asc" ? "<" : ">";
  return `(${sort.key} ${op} ${v} OR (${sort.key} = ${v} AND time ${op}= ${t}))`;
}

function queryIdOf(query: { queryId?: unknown }): string {
  const id = query.queryId;
  if (typeof id === "string" && /^[\w-]{1,64}$/.test(id)) return id;
  return randomUUID();
}

/** The store both engines share: validation, limits, SQL generation and result shaping. */
export class SqlEventStore implements EventStore {
  readonly kind: EventStore["kind"];
  readonly insertBatchSize: number;
  private readonly gate: NamespaceGate;
  private readonly limits: StoreLimits;
  private readonly known = new Set<string>();
  private readonly inFlight = new Map<string, Promise<SliceCounts>>();
  /** Every stored column, for reading whole events. */
  private readonly fullSelect: string;
  /** The columns that may be stored once (stored-body.ts) in this layout, by the group whose search texts are read together. */
  private readonly onceGroups: ReadonlyArray<readonly StoredOnceColumn[]>;

  constructor(
    private readonly engine: Engine,
    limits: Partial<StoreLimits> = {},
  ) {
    // A whole event is read without its search texts: nothing shows them, and they would double what a page of
    // events (a HAR export's, a detail's children) holds in the store's memory. A body or header list stored once is
    // read from its search text in a further statement over those rows alone (withStoredOnce).
    this.fullSelect = engine.layout.columns.map((c) => (searchColumns.has(c.name) ? `'' AS ${c.name}` : c.name)).join(", ");
    const once = storedOnceColumns.filter((c) => engine.layout.typeOf.has(c.column) && engine.layout.typeOf.has(c.text));
    this.onceGroups = [...new Set(once.map((c) => c.group))].map((group) => once.filter((c) => c.group === group));
    this.kind = engine.kind;
    this.insertBatchSize = engine.insertBatchSize;
    this.limits = { ...defaultStoreLimits, ...limits };
    this.gate = new NamespaceGate(this.limits.maxConcurrentQueries, this.limits.maxQueuedQueries);
  }

  /**
   * Rows read with fullSelect, given the search text of each column stored once. Only those rows' search texts are read,
   * one statement per group (bodies, headers) over the rows with a column of that group stored once: selecting them
   * with the page would read every row's (a binary body's is larger than its base64).
   */
  private async withStoredOnce(namespaceId: string, queryId: string, table: string, rows: Record<string, unknown>[], startedNs?: bigint) {
    for (const group of this.onceGroups) {
      const once = rows.filter((r) => group.some((c) => r[c.column] === c.marker));
      if (once.length === 0) continue;
      const d = this.engine.dialect;
      const ids = [...new Set(once.map((r) => d.literal(String(r.event_id))))];
      const texts = group.map((c) => `CASE WHEN ${c.column} = ${d.literal(c.marker)} THEN ${c.text} ELSE '' END AS ${c.text}`);
      const isOnce = group.map((c) => `${c.column} = ${d.literal(c.marker)}`).join(" OR ");
      const found = await this.select(
        namespaceId,
        queryId,
        `SELECT event_id, time, ${texts.join(", ")} FROM ${table} WHERE event_id IN (${ids.join(", ")})${timeSpanOf(once)} AND (${isOnce}) LIMIT ${maxRowLimit}`,
        startedNs,
      );
      const key = (r: Record<string, unknown>) => `${String(r.event_id)} ${String(r.time)}`;
      const byKey = new Map(found.map((r) => [key(r), r]));
      for (const row of once) {
        const text = byKey.get(key(row));
        if (text) for (const c of group) row[c.text] = text[c.text];
      }
    }
    return rows;
  }

  /** An event read with fullSelect (and withStoredOnce), its search texts empty as for every whole event. */
  private wholeEvent(row: Record<string, unknown>): TracedEvent {
    const event = rowToEvent(row, this.engine.layout) as Record<string, unknown>;
    for (const name of searchColumns) if (name in event) event[name] = "";
    return event as TracedEvent;
  }

  async ensureNamespace(namespaceId: string): Promise<void> {
    const table = tableName(namespaceId);
    if (this.known.has(table)) return;
    await this.engine.createTable(table);
    this.known.add(table);
  }

  async insert(namespaceId: string, events: readonly TracedEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.insertRows(namespaceId, [toEventRows(events, this.engine.layout)]);
  }

  async insertRows(namespaceId: string, rows: readonly EventRows[]): Promise<void> {
    const chunks = rows.filter((r) => r.count > 0);
    if (chunks.length === 0) return;
    await this.ensureNamespace(namespaceId);
    await this.engine.insert(tableName(namespaceId), chunks);
  }

  /** `startedNs`: when the caller's query began; its statements share one time budget. */
  private async select(_namespaceId: string, queryId: string, sql: string, startedNs?: bigint) {
    const budgetMs = this.limits.queryTimeoutMs;
    const since = startedNs ?? process.hrtime.bigint();
    const elapsedMs = () => Number(process.hrtime.bigint() - since) / 1e6;
    const timeoutMs = budgetMs - elapsedMs();
    if (timeoutMs <= 0) throw new AppError("UNAVAILABLE", "query timed out");
    let rows: Record<string, unknown>[];
    try {
      rows = await this.engine.select(sql, { timeoutMs: Math.max(1, Math.ceil(timeoutMs)), queryId });
    } catch (err) {
      throw this.translate(err);
    }
    // The engine's cancel timer may fire after the statement already finished: a late answer is over budget all the same.
    if (elapsedMs() > budgetMs) throw new AppError("UNAVAILABLE", "query timed out");
    return rows;
  }

  private translate(err: unknown): Error {
    if (err instanceof AppError) return err;
    const message = errorMessage(err);
    if (/timeout|timed out|interrupt|TIMEOUT_EXCEEDED|aborted/i.test(message)) {
      return new AppError("UNAVAILABLE", "query timed out");
    }
    if (/regex|regular expression|re2/i.test(message)) return new AppError("BAD_REQUEST", "invalid regular expression");
    // DuckDB's "Out of Memory Error", ClickHouse's MEMORY_LIMIT_EXCEEDED: the store's share of memory, not the query's fault.
    if (/out of memory|MEMORY_LIMIT_EXCEEDED/i.test(message)) {
      return new AppError(
        "UNAVAILABLE",
        "the event store ran out of memory for this query; try again, narrow it, or give the server more (MEMORY_LIMIT)",
      );
    }
    return toError(err);
  }

  /** Queries a namespace that was never written to as an empty table, without creating it. */
  private async hasTable(namespaceId: string): Promise<boolean> {
    const table = tableName(namespaceId);
    if (this.known.has(table)) return true;
    const tables = await this.engine.listTables();
    if (!tables.includes(table)) return false;
    // A table made by an older version gets the columns added since before it is read.
    await this.engine.createTable(table);
    this.known.add(table);
    return true;
  }

  async queryRows(namespaceId: string, query: RowsQuery): Promise<RowsResult> {
    const table = tableName(namespaceId);
    const started = process.hrtime.bigint();
    const queryId = queryIdOf(query);
    const range = checkRange(query.filter?.focus ?? query.filter?.global, "query");
    const limit = query.limit ?? maxRowLimit;
    if (!Number.isInteger(limit) || limit < 1 || limit > maxRowLimit) {
      throw new AppError("BAD_REQUEST", `limit must be 1..${maxRowLimit}`);
    }
    const offset = query.offset ?? 0;
    if (!Number.isInteger(offset) || offset < 0 || offset > maxRowOffset) {
      throw new AppError("BAD_REQUEST", `offset must be 0..${maxRowOffset}`);
    }
    const sort = sortOf(query.sort);
    const columns = selectedColumns(query.columns, this.engine.layout);
    const where = compileWhere(this.engine.dialect, query, range, this.engine.layout.fields);
    const result: RowsResult = {
      queryId,
      durationInNanoseconds: 0,
      meta: columns,
      data: [],
      wasRowLimitExceeded: false,
      actualNumberOfRows: 0,
    };
    if (!(await this.hasTable(namespaceId))) return result;
    const select = `SELECT ${columns.join(", ")} FROM ${table} WHERE ${where}`;
    // The sort's column, then time and event id the same way: a total order, so offsets page without overlap or gaps.
    const keys = sort.key === "time" ? ["time", "event_id"] : [sort.key, "time", "event_id"];
    const order = `ORDER BY ${keys.map((k) => `${k} ${sort.dir.toUpperCase()}`).join(", ")} LIMIT ${limit}${offset > 0 ? ` OFFSET ${offset}` : ""}`;
    const d = this.engine.dialect;
    const counts = await this.sliceCounts(namespaceId, queryId, table, where, range);
    const total = counts.slices.reduce((sum, c) => sum + c.n, 0);
    result.actualNumberOfRows = total;
    result.wasRowLimitExceeded = total > limit;
    if (total === 0 || offset >= total) return result;
    // Sorted by time, the page lies in the slices at that end of the range that hold offset + limit rows: only those
    // are read. Sorted by another column, a first narrow top-N (the column and time alone) finds the last row the page
    // can reach, and the wide read keeps only the rows at or before it: the list's columns are carried through a
    // top-N of about offset + limit rows instead of the whole range's.
    let windowed = "";
    const need = offset + limit;
    if (total > need) {
      if (sort.key === "time") windowed = this.timeWindow(counts, need, sort.dir);
      else {
        const bound = `SELECT ${sort.key} AS v, time AS t FROM ${table} WHERE ${where} ORDER BY ${sort.key} ${sort.dir.toUpperCase()}, time ${sort.dir.toUpperCase()} LIMIT 1 OFFSET ${need - 1}`;
        const [last] = await this.gate.run(namespaceId, () => this.select(namespaceId, queryId, bound, started));
        if (last) windowed = ` AND ${beforeOrAt(d, sort, last.v, last.t, this.engine.layout)}`;
      }
    }
    // The page's read gets what is left of the budget the slice counts started.
    const raw = await this.gate.run(namespaceId, () => this.select(namespaceId, queryId, `${select}${windowed} ${order}`, started));
    result.data = raw.map((r) => toRow(r, columns, this.engine.layout));
    result.durationInNanoseconds = Number(process.hrtime.bigint() - started);
    return result;
  }

  /** Whether a query's WHERE is its range alone on an engine with the per-minute rollup (sql/endpoint-rollup.ts). */
  private isRangeOnly(where: string, range: TimestampFilter): boolean {
    const d = this.engine.dialect;
    return (
      this.engine.hasEndpointRollup === true && where === compileWhere(d, { filter: { clauses: [], global: range, focus: null } }, range)
    );
  }

  /** The time condition that keeps the `need` rows at the `dir` end of the range (newest for desc), from the slice counts. */
  private timeWindow(counts: SliceCounts, need: number, dir: RowSort["dir"]): string {
    const isNewest = dir === "desc";
    const slices = [...counts.slices].sort((a, b) => (isNewest ? b.s - a.s : a.s - b.s));
    let seen = 0;
    for (const c of slices) {
      seen += c.n;
      if (seen >= need) {
        const edge = counts.startMicros + (isNewest ? c.s : c.s + 1) * counts.stepMicros;
        return ` AND time ${isNewest ? ">=" : "<"} ${this.engine.dialect.literal(edge)}`;
      }
    }
    return "";
  }

  /**
   * One filtered scan counting matches (and 5xx/4xx) per slice of the range's histogram grid, each bucket cut
   * into a power-of-two number of slices. The explorer asks for the histogram and the first page at once over
   * the same range and filter: the second caller joins the scan already in flight instead of repeating it
   * (only while it runs, so no result is ever older than the request).
   */
  private sliceCounts(namespaceId: string, queryId: string, table: string, where: string, range: TimestampFilter): Promise<SliceCounts> {
    const grid = bucketGrid(range.lowerMs, range.upperMs);
    // Unfiltered, over buckets of whole minutes, the counts come from the engine's per-minute rollup where it has one:
    // then each slice is whole minutes too.
    const minutes = this.isRangeOnly(where, range) && grid.bucketMs % 60_000 === 0 ? grid.bucketMs / 60_000 : 0;
    let perBucket = 1;
    if (minutes > 0) while (perBucket < minutes && (minutes % perBucket !== 0 || grid.count * perBucket < windowSlices)) perBucket++;
    else while (perBucket < 64 && grid.count * perBucket < windowSlices) perBucket *= 2;
    const startMicros = toMicros(grid.startMs);
    const stepMicros = (grid.bucketMs * 1000) / perBucket;
    const key = `${table}|${startMicros}|${stepMicros}|${where}`;
    const running = this.inFlight.get(key);
    // A joiner still takes a slot of the namespace's gate, so the limits mean what they did.
    if (running) return this.gate.run(namespaceId, () => running);
    const d = this.engine.dialect;
    const sql =
      (minutes > 0 && rollupSliceCountsSql(table, range, startMicros, stepMicros)) ||
      `SELECT ${d.intDiv(`time - ${d.literal(startMicros)}`, d.literal(stepMicros))} AS s, count(*) AS n, ` +
        `${d.countIf("http_resp_status_code >= 500")} AS e5, ` +
        `${d.countIf("http_resp_status_code >= 400 AND http_resp_status_code < 500")} AS e4 ` +
        `FROM ${table} WHERE ${where} GROUP BY s${d.countSettings}`;
    const scan = this.gate
      .run(namespaceId, () => this.select(namespaceId, queryId, sql))
      .then((raw) => ({
        startMicros,
        stepMicros,
        perBucket,
        slices: raw.map((r) => ({ s: Number(r.s), n: Number(r.n), e5: Number(r.e5), e4: Number(r.e4) })),
      }));
    this.inFlight.set(key, scan);
    const forget = () => this.inFlight.delete(key);
    scan.then(forget, forget);
    return scan;
  }

  async histogram(namespaceId: string, query: HistogramQuery): Promise<HistogramResult> {
    const table = tableName(namespaceId);
    const started = process.hrtime.bigint();
    const queryId = queryIdOf(query);
    const range = checkRange(query.filter?.global, "global");
    const grid = bucketGrid(range.lowerMs, range.upperMs);
    const d = this.engine.dialect;
    const where = compileWhere(d, query, range, this.engine.layout.fields);
    const buckets: HistogramBucket[] = Array.from({ length: grid.count }, (_, i) => ({
      timeMs: grid.startMs + i * grid.bucketMs,
      count: 0,
      serverErrors: 0,
      clientErrors: 0,
    }));
    let total = 0;
    const withLatency = query.latency === true;
    if (withLatency) for (const b of buckets) Object.assign(b, { p50: null, p95: null, p99: null });
    if (await this.hasTable(namespaceId)) {
      const latency = withLatency
        ? this.gate.run(namespaceId, () =>
            this.select(namespaceId, queryId, latencySql(d, table, where, toMicros(grid.startMs), grid.bucketMs * 1000), started),
          )
        : null;
      const counts = await this.sliceCounts(namespaceId, queryId, table, where, range);
      for (const r of counts.slices) {
        const b = buckets[Math.floor(r.s / counts.perBucket)];
        if (!b) continue;
        b.count += r.n;
        b.serverErrors += r.e5;
        b.clientErrors += r.e4;
        total += r.n;
      }
      for (const r of (await latency) ?? []) {
        const b = buckets[Number(r.s)];
        if (!b) continue;
        b.p50 = Math.round(Number(r.p50));
        b.p95 = Math.round(Number(r.p95));
        b.p99 = Math.round(Number(r.p99));
      }
    }
    return {
      queryId,
      durationInNanoseconds: Number(process.hrtime.bigint() - started),
      bucketMs: grid.bucketMs,
      startMs: grid.startMs,
      buckets,
      total,
    };
  }

  /**
   * The Endpoints table: one grouped scan for the rows, and with sparklines a second grouped by point of the range, run
   * at once; both share the query's time budget and take the namespace's gate like any query.
   */
  async endpoints(namespaceId: string, query: EndpointsQuery): Promise<EndpointsResult> {
    const table = tableName(namespaceId);
    const started = process.hrtime.bigint();
    const queryId = queryIdOf(query);
    const range = checkRange(query.filter?.focus ?? query.filter?.global, "query");
    const plan = planEndpoints(query, range);
    const d = this.engine.dialect;
    const where = compileWhere(d, query, range, this.engine.layout.fields);
    const result: EndpointsResult = {
      queryId,
      durationInNanoseconds: 0,
      rows: [],
      wasRowLimitExceeded: false,
      quantiles: d.quantileMethod,
      sparklineStartMs: range.lowerMs,
      sparklineStepMs: plan.stepMs,
    };
    if (await this.hasTable(namespaceId)) {
      // A query that filters by its range alone is answered from the engine's per-minute rollup where it has one.
      const isRangeOnly = this.isRangeOnly(where, range);
      const tableSql = (isRangeOnly && rollupEndpointsSql(table, range, plan)) || endpointsSql(d, table, where, plan);
      const rowsRun = this.gate.run(namespaceId, () => this.select(namespaceId, queryId, tableSql, started));
      // The sparklines' statement needs nothing from the rows': it runs beside it.
      const sparklineRun =
        plan.points > 0
          ? this.gate.run(namespaceId, () => {
              const sql =
                (isRangeOnly && rollupSparklineSql(table, range, plan, endpointLimits.maxRows * endpointLimits.maxSparklinePoints)) ||
                sparklineSql(d, table, where, plan, toMicros(range.lowerMs));
              return this.select(namespaceId, queryId, sql, started);
            })
          : null;
      // Its failure is the answer's only once the rows' statement has succeeded (awaited below).
      sparklineRun?.catch(() => undefined);
      const raw = await rowsRun;
      result.wasRowLimitExceeded = raw.length > plan.limit;
      result.rows = raw.slice(0, plan.limit).map((r) => toEndpointRow(r, plan));
      if (sparklineRun && result.rows.length > 0) {
        const byKey = new Map(result.rows.map((row) => [endpointKey({ ...row, o: row.isOutgoing ? 1 : 0 }), row]));
        for (const r of await sparklineRun) {
          const row = byKey.get(endpointKey(r));
          const at = Number(r.s);
          if (row && at >= 0 && at < plan.points) row.sparkline[at] = Math.round(Number(r.p95));
        }
      }
    }
    result.durationInNanoseconds = Number(process.hrtime.bigint() - started);
    return result;
  }

  async getEvents(namespaceId: string, eventIds: readonly string[], range?: TimestampFilter): Promise<TracedEvent[]> {
    const table = tableName(namespaceId);
    if (eventIds.length > maxRowLimit || !eventIds.every(isUuid)) {
      throw new AppError("BAD_REQUEST", "invalid event id");
    }
    if (eventIds.length === 0 || !(await this.hasTable(namespaceId))) return [];
    const d = this.engine.dialect;
    let where = `event_id IN (${eventIds.map((id) => d.literal(id)).join(", ")})`;
    if (range) {
      const r = checkRange(range, "range");
      where += ` AND time >= ${d.literal(toMicros(r.lowerMs))} AND time < ${d.literal(toMicros(r.upperMs))}`;
    }
    const queryId = randomUUID();
    const rows = await this.gate.run(namespaceId, async () =>
      this.withStoredOnce(
        namespaceId,
        queryId,
        table,
        await this.select(namespaceId, queryId, `SELECT ${this.fullSelect} FROM ${table} WHERE ${where} LIMIT ${maxRowLimit}`),
      ),
    );
    return rows.map((row) => this.wholeEvent(row));
  }

  /**
   * Not behind the namespace's query gate: a publisher's resent message waits on it, and a namespace busy with
   * queries must not make ingest store twice. Bounded all the same: the ids of one message, one time range.
   */
  async storedEventIds(namespaceId: string, eventIds: readonly string[], fromMicros: number, toMicros: number): Promise<Set<string>> {
    if (eventIds.length > maxRowLimit || !eventIds.every(isUuid) || !Number.isFinite(fromMicros) || !Number.isFinite(toMicros)) {
      throw new AppError("BAD_REQUEST", "invalid event ids or range");
    }
    if (eventIds.length === 0 || !(await this.hasTable(namespaceId))) return new Set();
    const d = this.engine.dialect;
    const rows = await this.select(
      namespaceId,
      randomUUID(),
      `SELECT event_id FROM ${tableName(namespaceId)} WHERE time >= ${d.literal(Math.floor(fromMicros))} AND time <= ${d.literal(Math.ceil(toMicros))} AND event_id IN (${eventIds.map((id) => d.literal(id)).join(", ")})`,
    );
    return new Set(rows.map((r) => String(r.event_id)));
  }

  async getEvent(namespaceId: string, eventId: string): Promise<EventDetail | null> {
    const table = tableName(namespaceId);
    if (!isUuid(eventId)) throw new AppError("BAD_REQUEST", "invalid event id");
    const started = process.hrtime.bigint();
    const queryId = randomUUID();
    if (!(await this.hasTable(namespaceId))) return null;
    const d = this.engine.dialect;
    const id = d.literal(eventId);
    return this.gate.run(namespaceId, async () => {
      const found = await this.select(namespaceId, queryId, `SELECT ${this.fullSelect} FROM ${table} WHERE event_id = ${id} LIMIT 1`);
      if (!found[0]) return null;
      const children = await this.select(
        namespaceId,
        queryId,
        `SELECT ${this.fullSelect} FROM ${table} WHERE parent_event_id = ${id} ORDER BY time ASC, event_id ASC LIMIT ${maxRowLimit}`,
      );
      await this.withStoredOnce(namespaceId, queryId, table, [found[0], ...children]);
      return {
        queryId,
        durationInNanoseconds: Number(process.hrtime.bigint() - started),
        event: this.wholeEvent(found[0]),
        children: children.map((row) => this.wholeEvent(row)),
      };
    });
  }

  async deleteOlderThan(namespaceId: string, cutoffMicros: number): Promise<void> {
    if (!Number.isFinite(cutoffMicros)) throw new AppError("BAD_REQUEST", "invalid cutoff");
    if (!(await this.hasTable(namespaceId))) return;
    await this.engine.deleteOlderThan(tableName(namespaceId), Math.floor(cutoffMicros));
  }

  async applyRetention(namespaceId: string, days: number, nowMs: number): Promise<void> {
    if (!Number.isFinite(days) || days <= 0) throw new AppError("BAD_REQUEST", "invalid retention");
    if (!(await this.hasTable(namespaceId))) return;
    if (await this.engine.setTtl?.(tableName(namespaceId), days)) return;
    await this.deleteOlderThan(namespaceId, toMicros(nowMs - days * 86_400_000));
  }

  /**
   * Plain COUNT(*) over the namespace's table, optionally within a time range (a scan of `time` alone) and under filter
   * expressions compiled as every query's are (one filtered scan with no grouping, no page): the floors benchmarks
   * compare the explorer's queries with.
   */
  async countAll(namespaceId: string, range?: TimestampFilter, expressions?: FilterExpr[]): Promise<number> {
    const table = tableName(namespaceId);
    if (expressions && !range) throw new AppError("BAD_REQUEST", "a filtered count needs a time range");
    if (!(await this.hasTable(namespaceId))) return 0;
    const d = this.engine.dialect;
    const where = !range
      ? ""
      : expressions
        ? ` WHERE ${compileWhere(d, { filter: { clauses: [], global: range, focus: null }, expressions }, checkRange(range, "range"), this.engine.layout.fields)}`
        : ` WHERE time >= ${d.literal(toMicros(range.lowerMs))} AND time < ${d.literal(toMicros(range.upperMs))}`;
    const rows = await this.select(namespaceId, "baseline", `SELECT count(*) AS n FROM ${table}${where}${d.countSettings}`);
    return Number(rows[0]?.n ?? 0);
  }

  async listNamespaces(): Promise<string[]> {
    const tables = await this.engine.listTables();
    return tables.map(namespaceIdOfTable).filter((id): id is string => id !== null);
  }

  async dropNamespace(namespaceId: string): Promise<void> {
    const table = tableName(namespaceId);
    await this.engine.dropTable(table);
    this.known.delete(table);
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

/**
 * ` AND time BETWEEN first AND last` of the rows' times (microseconds), so an engine reads only that span of its table
 * (both order and prune by time) instead of every event id; "" when a time is not a whole number.
 */
function timeSpanOf(rows: readonly Record<string, unknown>[]): string {
  let first: bigint | null = null;
  let last: bigint | null = null;
  for (const row of rows) {
    const text = String(row.time);
    if (!/^\d{1,19}$/.test(text)) return "";
    const time = BigInt(text);
    if (first === null || time < first) first = time;
    if (last === null || time > last) last = time;
  }
  return first === null || last === null ? "" : ` AND time >= ${first} AND time <= ${last}`;
}
