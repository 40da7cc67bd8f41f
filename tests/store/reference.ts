import type { FilterExpr } from "~/lib/filter/ast.ts";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { Clause, QueryBase, RowSort, TimestampFilter } from "~/lib/protocol/query.ts";
import { bucketGrid } from "~/lib/time/buckets.ts";

/** The answers a store must give, computed in plain TypeScript from the events themselves. */

function likeToRegex(pattern: string): RegExp {
  let out = "^";
  for (const c of pattern) out += c === "%" ? "[\\s\\S]*" : c === "_" ? "[\\s\\S]" : c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`${out}$`, "u");
}

function numeric(e: TracedEvent, column: string): number {
  const v = (e as Record<string, unknown>)[column];
  return typeof v === "boolean" ? (v ? 1 : 0) : Number(v);
}

function clauseHolds(e: TracedEvent, c: Clause): boolean {
  if (c.type === "Number") {
    const v = numeric(e, c.column);
    switch (c.op) {
      case "Equals":
        return v === c.value;
      case "NotEquals":
        return v !== c.value;
      case "GreaterThan":
        return v > c.value;
      case "GreaterThanOrEquals":
        return v >= c.value;
      case "LesserThan":
        return v < c.value;
      case "LesserThanOrEquals":
        return v <= c.value;
    }
  }
  const v = String((e as Record<string, unknown>)[c.column]);
  switch (c.op) {
    case "Equals":
      return v === c.value;
    case "DoesNotEqual":
      return v !== c.value;
    case "Like":
      return likeToRegex(c.value).test(v);
    case "NotLike":
      return !likeToRegex(c.value).test(v);
  }
  return false;
}

function compare(a: number | string | boolean, op: string, b: number | string | boolean): boolean {
  switch (op) {
    case "==":
      return a === b;
    case "!=":
      return a !== b;
    case "<":
      return a < b;
    case ">":
      return a > b;
    case "<=":
      return a <= b;
    case ">=":
      return a >= b;
  }
  return false;
}

export function exprHolds(e: TracedEvent, x: FilterExpr): boolean {
  if (x.kind === "and") return exprHolds(e, x.left) && exprHolds(e, x.right);
  if (x.kind === "or") return exprHolds(e, x.left) || exprHolds(e, x.right);
  if (x.kind === "not") return !exprHolds(e, x.expr);
  switch (x.field) {
    case "request.method":
      return compare(e.http_req_method.toUpperCase(), x.op, String(x.value).toUpperCase());
    case "response.status":
      return compare(e.http_resp_status_code, x.op, Number(x.value));
    case "duration":
      return compare(e.http_duration, x.op, Number(x.value));
    case "tls":
    case "tls.reason":
    case "tls.server_name":
    case "request.route":
    case "request.url": {
      const p =
        x.field === "request.url"
          ? e.http_req_path
          : x.field === "request.route"
            ? e.http_route
            : x.field === "tls.server_name"
              ? e.tls_server_name
              : (e.tags[x.field === "tls" ? "tls" : "tls_reason"] ?? "");
      const v = String(x.value);
      if (x.op === "startsWith") return p.startsWith(v);
      if (x.op === "endsWith") return p.endsWith(v);
      if (x.op === "contains") return p.includes(v);
      if (x.op === "matches") return new RegExp(v).test(p);
      return compare(p, x.op, v);
    }
    default:
      // The content and other fields: the live view's evaluator is the reference the stores must agree with.
      return compileFilter(x)(e);
  }
}

export function matching(events: readonly TracedEvent[], query: QueryBase, range: TimestampFilter): TracedEvent[] {
  const lo = Math.round(range.lowerMs * 1000);
  const hi = Math.round(range.upperMs * 1000);
  return events.filter(
    (e) =>
      e.time >= lo &&
      e.time < hi &&
      (query.filter.clauses ?? []).every((c) => clauseHolds(e, c)) &&
      (query.expressions ?? []).every((x) => exprHolds(e, x)),
  );
}

export function newestFirst(events: TracedEvent[]): TracedEvent[] {
  return [...events].sort((a, b) => b.time - a.time || (a.event_id < b.event_id ? 1 : a.event_id > b.event_id ? -1 : 0));
}

/** The store's order for a sort: the column, then time, then event id, all the same way (strings by code unit, ASCII here). */
export function sortedBy(events: TracedEvent[], sort: RowSort): TracedEvent[] {
  const sign = sort.dir === "asc" ? 1 : -1;
  const cmp = (x: string | number, y: string | number) => (x < y ? -1 : x > y ? 1 : 0);
  return [...events].sort((a, b) => sign * (cmp(a[sort.key], b[sort.key]) || cmp(a.time, b.time) || cmp(a.event_id, b.event_id)));
}

export function referenceHistogram(events: readonly TracedEvent[], query: QueryBase) {
  const g = query.filter.global;
  const grid = bucketGrid(g.lowerMs, g.upperMs);
  const counts = Array.from({ length: grid.count }, () => ({
    count: 0,
    serverErrors: 0,
    clientErrors: 0,
  }));
  for (const e of matching(events, query, g)) {
    const i = Math.floor((e.time - grid.startMs * 1000) / (grid.bucketMs * 1000));
    const b = counts[i];
    if (!b) continue;
    b.count++;
    if (e.http_resp_status_code >= 500) b.serverErrors++;
    else if (e.http_resp_status_code >= 400) b.clientErrors++;
  }
  return { grid, counts };
}

/** The events of one endpoint of the Endpoints table, by its key, busiest first (HTTP only, as the stores group). */
export function referenceEndpoints(events: readonly TracedEvent[], query: QueryBase, range: TimestampFilter) {
  const groups = new Map<string, TracedEvent[]>();
  for (const e of matching(events, query, range)) {
    if (e.protocol !== "http") continue;
    const key = endpointKeyOf(e);
    const list = groups.get(key);
    if (list) list.push(e);
    else groups.set(key, [e]);
  }
  return groups;
}

export function endpointKeyOf(e: {
  service: string;
  http_is_outgoing: boolean;
  http_req_host: string;
  http_req_method: string;
  http_route: string;
}): string {
  return JSON.stringify([e.service, e.http_is_outgoing, e.http_is_outgoing ? e.http_req_host : "", e.http_req_method, e.http_route]);
}

/**
 * Whether `value` is a `q` quantile of `values` within `tolerance` of rank: at most q + tolerance of them lie below it,
 * at least q - tolerance at or below it. Exact engines are held to one value's rank, sketches to their stated error.
 */
export function isQuantileOf(values: readonly number[], value: number, q: number, tolerance: number): boolean {
  const n = values.length;
  let below = 0;
  let atOrBelow = 0;
  for (const v of values) {
    if (v < value) below++;
    if (v <= value) atOrBelow++;
  }
  return below / n <= q + tolerance && atOrBelow / n >= q - tolerance;
}
