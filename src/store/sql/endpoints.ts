import { AppError } from "~/lib/errors.ts";
import { type EndpointRow, type EndpointsQuery, endpointLimits, type TimestampFilter } from "~/lib/protocol/query.ts";
import type { Dialect } from "./dialect.ts";

/**
 * The SQL of the Endpoints table and of the histogram's latency lines: one grouped scan each, over a WHERE that
 * compileWhere made (so every value in it was checked there). Percentiles are the engine's (Dialect.quantiles).
 */

/** The Endpoints table's percentiles (ClickHouse's rollup keeps its quantiles' states at these levels). */
export const endpointLevels = [0.5, 0.95, 0.99] as const;
const levels = endpointLevels;

/** What groups an endpoint: service, direction, an outgoing call's Host, method, route (all alike for one whole row). */
function keyColumns(d: Dialect, isWhole = false): string {
  if (isWhole) {
    const none = d.literal("");
    return `${none} AS service, 0 AS o, ${none} AS host, ${none} AS method, ${none} AS route`;
  }
  const host = `CASE WHEN http_is_outgoing = 1 THEN http_req_host ELSE ${d.literal("")} END`;
  return `service AS service, http_is_outgoing AS o, ${host} AS host, http_req_method AS method, http_route AS route`;
}

const keyList = "service, o, host, method, route";

export type EndpointsPlan = { limit: number; points: number; rankOfMicros: number | null; stepMs: number; isWhole: boolean };

function bad(message: string): never {
  throw new AppError("BAD_REQUEST", message);
}

/** The query's options, checked (they crossed a socket). */
export function planEndpoints(query: EndpointsQuery, range: TimestampFilter): EndpointsPlan {
  const limit = query.limit ?? endpointLimits.maxRows;
  if (!Number.isInteger(limit) || limit < 1 || limit > endpointLimits.maxRows) bad(`limit must be 1..${endpointLimits.maxRows}`);
  const points = query.sparklinePoints ?? 0;
  if (!Number.isInteger(points) || points < 0 || points > endpointLimits.maxSparklinePoints) {
    bad(`sparklinePoints must be 0..${endpointLimits.maxSparklinePoints}`);
  }
  const rank = query.rankOfMicros;
  if (rank !== undefined && !(Number.isSafeInteger(rank) && rank >= 0)) bad("rankOfMicros must be a whole number of microseconds");
  const stepMs = points > 0 ? Math.max(1, Math.ceil((range.upperMs - range.lowerMs) / points)) : 0;
  if (query.isWhole !== undefined && typeof query.isWhole !== "boolean") bad("isWhole must be true or false");
  return { limit, points, rankOfMicros: rank ?? null, stepMs, isWhole: query.isWhole === true };
}

/** One row per endpoint, the busiest first, one more than the limit (to tell that some were left out). */
/**
 * ClickHouse groups (the table and its sparklines) on one 64-bit hash of the five keys and takes the keys with any(): about half the time of grouping
 * on the five texts (bench/README.md, endpoints). Two endpoints would share a row only if their keys' hashes collide.
 */
function hashedKeyColumns(): string {
  const host = "if(http_is_outgoing = 1, http_req_host, '')";
  return (
    `cityHash64(service, http_is_outgoing, ${host}, http_req_method, http_route) AS endpoint_hash, ` +
    `any(service) AS k_service, any(http_is_outgoing) AS k_o, any(${host}) AS k_host, any(http_req_method) AS k_method, ` +
    "any(http_route) AS k_route"
  );
}

const hashedOuterKeys = "k_service AS service, k_o AS o, k_host AS host, k_method AS method, k_route AS route";

export function endpointsSql(d: Dialect, table: string, where: string, plan: EndpointsPlan): string {
  const faster = plan.rankOfMicros === null ? "" : `, ${d.countIf(`http_duration < ${d.literal(plan.rankOfMicros)}`)} AS faster`;
  const isHashed = d.name === "clickhouse" && !plan.isWhole;
  const keys = isHashed ? hashedKeyColumns() : keyColumns(d, plan.isWhole);
  const grouping = plan.isWhole ? "" : isHashed ? " GROUP BY endpoint_hash" : ` GROUP BY ${keyList}`;
  const outerKeys = isHashed ? hashedOuterKeys : keyList;
  const inner =
    `SELECT ${keys}, count(*) AS n, ` +
    `${d.countIf("http_resp_status_code >= 400 AND http_resp_status_code < 500")} AS e4, ` +
    `${d.countIf("http_resp_status_code >= 500")} AS e5, ` +
    `${d.quantiles("http_duration", levels)} AS q, max(http_duration) AS mx, ` +
    `sum(http_req_body_size_bytes_wire) AS bin, sum(http_resp_body_size_bytes_wire) AS bout${faster} ` +
    `FROM ${table} WHERE ${where} AND protocol = ${d.literal("http")}${grouping}`;
  // Without GROUP BY an empty scan still gives its one row (count 0): the WHERE below drops it.
  return (
    `SELECT ${outerKeys}, n, e4, e5, q[1] AS p50, q[2] AS p95, q[3] AS p99, mx, bin, bout${plan.rankOfMicros === null ? "" : ", faster"} ` +
    `FROM (${inner}) WHERE n > 0 ORDER BY n DESC, service, method, route, host LIMIT ${plan.limit + 1}`
  );
}

/** Each endpoint's p95 per point of the range (only points with requests). */
export function sparklineSql(d: Dialect, table: string, where: string, plan: EndpointsPlan, startMicros: number): string {
  const s = d.intDiv(`time - ${d.literal(startMicros)}`, d.literal(plan.stepMs * 1000));
  const isHashed = d.name === "clickhouse" && !plan.isWhole;
  const keys = isHashed ? hashedKeyColumns() : keyColumns(d, plan.isWhole);
  const grouping = plan.isWhole ? "s" : isHashed ? "endpoint_hash, s" : `${keyList}, s`;
  const outerKeys = isHashed ? hashedOuterKeys : keyList;
  const inner =
    `SELECT ${keys}, ${s} AS s, ${d.sampledQuantiles("http_duration", [0.95])} AS q ` +
    `FROM ${table} WHERE ${where} AND protocol = ${d.literal("http")} GROUP BY ${grouping}`;
  return `SELECT ${outerKeys}, s, q[1] AS p95 FROM (${inner}) LIMIT ${endpointLimits.maxRows * endpointLimits.maxSparklinePoints}`;
}

/** The histogram's latency lines: the percentiles of each slice of its grid. */
export function latencySql(d: Dialect, table: string, where: string, startMicros: number, stepMicros: number): string {
  const s = d.intDiv(`time - ${d.literal(startMicros)}`, d.literal(stepMicros));
  const inner = `SELECT ${s} AS s, ${d.sampledQuantiles("http_duration", levels)} AS q FROM ${table} WHERE ${where} AND protocol = ${d.literal("http")} GROUP BY s`;
  return `SELECT s, q[1] AS p50, q[2] AS p95, q[3] AS p99 FROM (${inner})`;
}

const num = (v: unknown) => Number(v ?? 0);

export function endpointKey(r: Readonly<Record<string, unknown>>): string {
  return JSON.stringify([String(r.service), num(r.o), String(r.host), String(r.method), String(r.route)]);
}

/** A stored row as an EndpointRow (its sparkline filled in later). */
export function toEndpointRow(r: Record<string, unknown>, plan: EndpointsPlan): EndpointRow {
  const row: EndpointRow = {
    service: String(r.service ?? ""),
    isOutgoing: num(r.o) === 1,
    host: String(r.host ?? ""),
    method: String(r.method ?? ""),
    route: String(r.route ?? ""),
    requests: num(r.n),
    clientErrors: num(r.e4),
    serverErrors: num(r.e5),
    p50: Math.round(num(r.p50)),
    p95: Math.round(num(r.p95)),
    p99: Math.round(num(r.p99)),
    max: num(r.mx),
    bytesIn: num(r.bin),
    bytesOut: num(r.bout),
    sparkline: new Array<number | null>(plan.points).fill(null),
  };
  if (plan.rankOfMicros !== null) row.faster = num(r.faster);
  return row;
}
