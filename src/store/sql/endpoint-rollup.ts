import type { TimestampFilter } from "~/lib/protocol/query.ts";
import { type EndpointsPlan, endpointLevels } from "./endpoints.ts";
import { clickhouseLiteral as lit } from "./escape.ts";

/**
 * ClickHouse's per-minute rollup of a namespace's events (ADR 0035): an AggregatingMergeTree keyed by (minute, protocol,
 * service, direction, outgoing Host, method, route) holding the states the Endpoints table needs, filled by a
 * materialized view on the table the events are written to (each shard's local table on a cluster). Every event is
 * rolled up, whatever its protocol, so a count by minute of the whole table can come from it too; the Endpoints
 * queries keep `protocol = 'http'`. A query over a range takes its whole minutes from the rollup and the partial
 * minutes at its two edges from the events, merged with the same state functions.
 */

export const minuteMicros = 60_000_000;

/** The rollup's name beside a namespace's events table: what queries read (the Distributed table on a cluster). */
export function rollupTable(events: string): string {
  return `${events}_rollup`;
}

/** The materialized view that fills it from the events' own (local) table. */
export function rollupView(events: string): string {
  return `${events}_rollup_mv`;
}

const levels = endpointLevels.join(", ");

/** The key columns from an event row, named as the rollup's. */
const eventKeys =
  "protocol, service, http_is_outgoing AS o, if(http_is_outgoing = 1, http_req_host, '') AS host, http_req_method AS method, http_route AS route";
const keyNames = "protocol, service, o, host, method, route";

/**
 * The states of a set of events, named as the rollup's columns. Each is the aggregate the raw Endpoints query uses, as
 * its -State (the quantiles the same function with the same levels, so both answer alike).
 */
const eventStates =
  "countState() AS n, " +
  "sumState(toUInt64(http_resp_status_code >= 400 AND http_resp_status_code < 500)) AS e4, " +
  "sumState(toUInt64(http_resp_status_code >= 500)) AS e5, " +
  `quantilesTDigestState(${levels})(http_duration) AS q, ` +
  "maxState(http_duration) AS mx, " +
  "sumState(http_req_body_size_bytes_wire) AS bin, sumState(http_resp_body_size_bytes_wire) AS bout";

const rollupColumns = [
  "minute Int64",
  "protocol String",
  "service String",
  "o UInt8",
  "host String",
  "method String",
  "route String",
  "n AggregateFunction(count)",
  "e4 AggregateFunction(sum, UInt64)",
  "e5 AggregateFunction(sum, UInt64)",
  `q AggregateFunction(quantilesTDigest(${levels}), Int64)`,
  "mx AggregateFunction(max, Int64)",
  "bin AggregateFunction(sum, Int64)",
  "bout AggregateFunction(sum, Int64)",
].join(", ");

/** Partitioned by day like the events (toDate of the minute's start), so retention drops the same partitions of both. */
const rollupLayout =
  "PARTITION BY toDate(toDateTime(intDiv(minute, 1000000))) ORDER BY (minute, protocol, service, o, host, method, route)";

export type RollupCluster = { name: string; replicated: boolean };

/**
 * The DDL of the rollup: its table (the shards' local tables and a Distributed table over them on a cluster), then the
 * materialized view on `eventsLocal` (the table inserts land in: the shard's own on a cluster). Made only where the
 * view does not exist yet; `backfillSql` fills it from the events stored before.
 */
export function rollupStatements(events: string, eventsLocal: string, cluster: RollupCluster | undefined): string[] {
  const rollup = rollupTable(events);
  const view = rollupView(events);
  const selectStates = `SELECT intDiv(time, ${minuteMicros}) * ${minuteMicros} AS minute, ${eventKeys}, ${eventStates} FROM ${eventsLocal} GROUP BY minute, ${keyNames}`;
  if (!cluster) {
    return [
      `CREATE TABLE IF NOT EXISTS ${rollup} (${rollupColumns}) ENGINE = AggregatingMergeTree ${rollupLayout}`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} TO ${rollup} AS ${selectStates}`,
    ];
  }
  const local = `${rollup}_local`;
  const on = `ON CLUSTER ${cluster.name}`;
  const engine = cluster.replicated
    ? `ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/tapscope/${local}', '{replica}')`
    : "AggregatingMergeTree";
  return [
    `CREATE TABLE IF NOT EXISTS ${local} ${on} (${rollupColumns}) ENGINE = ${engine} ${rollupLayout}`,
    // Any shard may hold any minute's states (a backfill spreads them): a read merges them whatever the shard.
    `CREATE TABLE IF NOT EXISTS ${rollup} ${on} (${rollupColumns}) ENGINE = Distributed(${cluster.name}, currentDatabase(), ${local}, rand())`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} ${on} TO ${local} AS ${selectStates}`,
  ];
}

/** A backfill's step: an hour of events a statement, so none outlasts the client's request timeout on a large table. */
export const backfillStepMicros = 3_600_000_000;

/** The hours (since 1970) that hold events. */
export function eventHoursSql(events: string): string {
  return `SELECT DISTINCT intDiv(time, ${backfillStepMicros}) AS hour FROM ${events} ORDER BY hour`;
}

/**
 * The events stored before the view existed, rolled up once, an hour at a time: those of `hour` timed before
 * `beforeMicros` (when the view was about to be made), read through `events` (the Distributed table on a cluster) and
 * written through the rollup's.
 */
export function backfillSql(events: string, hour: number, beforeMicros: number): string {
  const from = hour * backfillStepMicros;
  const to = Math.min(from + backfillStepMicros, beforeMicros);
  return (
    `INSERT INTO ${rollupTable(events)} SELECT intDiv(time, ${minuteMicros}) * ${minuteMicros} AS minute, ${eventKeys}, ${eventStates} ` +
    `FROM ${events} WHERE time >= ${lit(from)} AND time < ${lit(to)} GROUP BY minute, ${keyNames}`
  );
}

/**
 * After the events before `cutoffMicros` are gone: the rollup's minutes before the cutoff's minute go (`deleteSql`),
 * and the minute the cutoff falls in is rolled up again from the events it still has (`refillSql`, into the table the
 * rows live in: `rollupTarget`), so the rollup never counts a deleted event nor loses a kept one.
 */
export function cutoffMinute(cutoffMicros: number): number {
  return Math.floor(cutoffMicros / minuteMicros) * minuteMicros;
}

export function deleteBeforeSql(rollupLocal: string, onCluster: string, cutoffMicros: number): string {
  return `ALTER TABLE ${rollupLocal}${onCluster} DELETE WHERE minute <= ${lit(cutoffMinute(cutoffMicros))}`;
}

export function refillCutoffMinuteSql(events: string, cutoffMicros: number): string {
  const minute = cutoffMinute(cutoffMicros);
  return (
    `INSERT INTO ${rollupTable(events)} SELECT intDiv(time, ${minuteMicros}) * ${minuteMicros} AS minute, ${eventKeys}, ${eventStates} ` +
    `FROM ${events} WHERE time >= ${lit(Math.max(minute, cutoffMicros))} AND time < ${lit(minute + minuteMicros)} GROUP BY minute, ${keyNames}`
  );
}

/** A range's whole minutes, [first, end) in microseconds; null when it holds none. */
export function wholeMinutes(lowerMicros: number, upperMicros: number): { first: number; end: number } | null {
  const first = Math.ceil(lowerMicros / minuteMicros) * minuteMicros;
  const end = Math.floor(upperMicros / minuteMicros) * minuteMicros;
  return first < end ? { first, end } : null;
}

type Span = { lowerMicros: number; upperMicros: number; first: number; end: number };

function spanOf(range: TimestampFilter): Span | null {
  const lowerMicros = Math.round(range.lowerMs * 1000);
  const upperMicros = Math.round(range.upperMs * 1000);
  const minutes = wholeMinutes(lowerMicros, upperMicros);
  return minutes ? { lowerMicros, upperMicros, ...minutes } : null;
}

/**
 * The rows of an Endpoints query: the rollup's states of the range's whole minutes and the states of the events in
 * its partial minutes (a scan of at most two minutes: the events are ordered by time), side by side, `extra` (an
 * expression of `minute` or `time`) carried along for the sparklines' point.
 */
function statesOf(events: string, span: Span, extra: (time: string) => string): string {
  const point = (time: string) => (extra(time) ? `, ${extra(time)} AS s` : "");
  const parts = [
    `SELECT ${keyNames}${point("minute")}, n, e4, e5, q, mx, bin, bout FROM ${rollupTable(events)} ` +
      `WHERE minute >= ${lit(span.first)} AND minute < ${lit(span.end)} AND protocol = 'http'`,
  ];
  const edges: string[] = [];
  if (span.lowerMicros < span.first) edges.push(`(time >= ${lit(span.lowerMicros)} AND time < ${lit(span.first)})`);
  if (span.end < span.upperMicros) edges.push(`(time >= ${lit(span.end)} AND time < ${lit(span.upperMicros)})`);
  if (edges.length > 0) {
    const group = `${keyNames}${extra("time") ? ", s" : ""}`;
    parts.push(
      `SELECT ${eventKeys}${point("time")}, ${eventStates} FROM ${events} WHERE (${edges.join(" OR ")}) AND protocol = 'http' GROUP BY ${group}`,
    );
  }
  return parts.join(" UNION ALL ");
}

/** Grouped on one hash of the five keys (as the raw query is on ClickHouse), the keys taken with any(). */
const hashedKeys =
  "cityHash64(service, o, host, method, route) AS endpoint_hash, any(service) AS k_service, any(o) AS k_o, any(host) AS k_host, " +
  "any(method) AS k_method, any(route) AS k_route";
const outerKeys = "k_service AS service, k_o AS o, k_host AS host, k_method AS method, k_route AS route";
const wholeKeys = "'' AS service, 0 AS o, '' AS host, '' AS method, '' AS route";

/**
 * The Endpoints table from the rollup, the same rows (names, order, limit) as endpointsSql's; null when the range
 * holds no whole minute (then the raw query is as cheap). Only for a query whose WHERE is its range alone and that
 * asks no rank (which needs each request's duration).
 */
export function rollupEndpointsSql(events: string, range: TimestampFilter, plan: EndpointsPlan): string | null {
  const span = spanOf(range);
  if (!span || plan.rankOfMicros !== null) return null;
  const merged =
    "countMerge(n) AS n, sumMerge(e4) AS e4, sumMerge(e5) AS e5, " +
    `quantilesTDigestMerge(${levels})(q) AS qs, maxMerge(mx) AS mx, sumMerge(bin) AS bin, sumMerge(bout) AS bout`;
  const states = statesOf(events, span, () => "");
  const inner = plan.isWhole
    ? `SELECT ${wholeKeys}, ${merged} FROM (${states})`
    : `SELECT ${outerKeys}, n, e4, e5, qs, mx, bin, bout FROM (SELECT ${hashedKeys}, ${merged} FROM (${states}) GROUP BY endpoint_hash)`;
  return (
    `SELECT service, o, host, method, route, n, e4, e5, qs[1] AS p50, qs[2] AS p95, qs[3] AS p99, mx, bin, bout ` +
    `FROM (${inner}) WHERE n > 0 ORDER BY n DESC, service, method, route, host LIMIT ${plan.limit + 1}`
  );
}

/**
 * Each endpoint's p95 per point from the rollup: a whole minute counts in the point its start falls in (a minute
 * across a point's end is counted in one point); the edges' events by their own time. Null where the points are
 * shorter than a minute or the range holds no whole minute (the raw query answers those).
 */
export function rollupSparklineSql(events: string, range: TimestampFilter, plan: EndpointsPlan, maxRows: number): string | null {
  const span = spanOf(range);
  if (!span || plan.stepMs < 60_000) return null;
  const point = (time: string) => `intDiv(${time} - ${lit(span.lowerMicros)}, ${lit(plan.stepMs * 1000)})`;
  const states = statesOf(events, span, point);
  const q = `quantilesTDigestMerge(${levels})(q)`;
  if (plan.isWhole) return `SELECT ${wholeKeys}, s, ${q}[2] AS p95 FROM (${states}) GROUP BY s LIMIT ${maxRows}`;
  return (
    `SELECT ${outerKeys}, s, p95 FROM (SELECT ${hashedKeys}, s, ${q}[2] AS p95 FROM (${states}) ` +
    `GROUP BY endpoint_hash, s) LIMIT ${maxRows}`
  );
}

/**
 * The explorer's counts per slice (all events, 5xx, 4xx) from the rollup: its whole minutes (a slice is whole minutes
 * from `startMicros`, a minute on the grid) and its cut edge minutes from the events. Null when the range holds no
 * whole minute.
 */
export function rollupSliceCountsSql(events: string, range: TimestampFilter, startMicros: number, stepMicros: number): string | null {
  const span = spanOf(range);
  if (!span) return null;
  const slice = (time: string) => `intDiv(${time} - ${lit(startMicros)}, ${lit(stepMicros)})`;
  const parts = [
    `SELECT ${slice("minute")} AS s, countMerge(n) AS n, sumMerge(e5) AS e5, sumMerge(e4) AS e4 FROM ${rollupTable(events)} ` +
      `WHERE minute >= ${lit(span.first)} AND minute < ${lit(span.end)} GROUP BY s`,
  ];
  const edges: string[] = [];
  if (span.lowerMicros < span.first) edges.push(`(time >= ${lit(span.lowerMicros)} AND time < ${lit(span.first)})`);
  if (span.end < span.upperMicros) edges.push(`(time >= ${lit(span.end)} AND time < ${lit(span.upperMicros)})`);
  if (edges.length > 0) {
    parts.push(
      `SELECT ${slice("time")} AS s, count() AS n, countIf(http_resp_status_code >= 500) AS e5, ` +
        `countIf(http_resp_status_code >= 400 AND http_resp_status_code < 500) AS e4 FROM ${events} WHERE ${edges.join(" OR ")} GROUP BY s`,
    );
  }
  return `SELECT s, sum(n) AS n, sum(e5) AS e5, sum(e4) AS e4 FROM (${parts.join(" UNION ALL ")}) GROUP BY s`;
}
