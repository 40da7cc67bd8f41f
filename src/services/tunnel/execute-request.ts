import { AppError } from "~/lib/errors.ts";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { EndpointRow, EndpointsQuery, QueryBase, QueryFilter, RowsQuery } from "~/lib/protocol/query.ts";
import {
  encodeResultData,
  errorResult,
  maxEventsPerRequest,
  type TunnelRequest,
  type TunnelResult,
  type TunnelResultData,
  type TunnelRole,
} from "~/lib/protocol/tunnel.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { log } from "~/lib/server/logger.ts";
import { SearchTexts } from "~/store/search-text.ts";
import type { EventStore } from "~/store/types.ts";

/** The search fields of inserted events are made here, whatever the sender put in them. */
const searchTexts = new SearchTexts();

/** A query's problem the client caused (bad filter, bad range): reported as a database error. */
class QueryInputError extends Error {}

function expressionsOf(filterText: unknown): FilterExpr[] | undefined {
  if (filterText === undefined || filterText === null || filterText === "") return undefined;
  if (typeof filterText !== "string") throw new QueryInputError("filterText must be a string");
  const parsed = parseFilter(filterText);
  if (!parsed.ok) throw new QueryInputError(`filter: ${parsed.error.message} (at position ${parsed.error.position})`);
  return [parsed.expr];
}

/** Copies only the known fields of a client's query object: nothing else reaches the store. */
function baseOf(raw: unknown, filterText: unknown): QueryBase {
  if (typeof raw !== "object" || raw === null) throw new QueryInputError("query must be an object");
  const q = raw as Record<string, unknown>;
  const f = (typeof q.filter === "object" && q.filter !== null ? q.filter : {}) as Record<string, unknown>;
  const filter: QueryFilter = {
    clauses: (f.clauses ?? []) as QueryFilter["clauses"],
    global: f.global as QueryFilter["global"],
    focus: (f.focus ?? null) as QueryFilter["focus"],
  };
  const base: QueryBase = { filter };
  const expressions = expressionsOf(filterText);
  if (expressions) base.expressions = expressions;
  if (typeof q.queryId === "string") base.queryId = q.queryId;
  return base;
}

const endpointColumns = [
  "service",
  "isOutgoing",
  "host",
  "method",
  "route",
  "requests",
  "clientErrors",
  "serverErrors",
  "p50",
  "p95",
  "p99",
  "max",
  "bytesIn",
  "bytesOut",
  "sparkline",
] satisfies Array<keyof EndpointRow>;

function rowsData(meta: string[], data: Record<string, unknown>[], r: Omit<TunnelResultData, "meta" | "data">): TunnelResultData {
  return { meta, data, ...r };
}

async function run(store: EventStore, namespaceId: string, request: TunnelRequest): Promise<{ id: string | null; data: TunnelResultData }> {
  const want = request.want as Record<string, unknown> & TunnelRequest["want"];
  switch (want.kind) {
    case "rows": {
      const base = baseOf(want.query, want.filterText);
      const q = want.query as Record<string, unknown>;
      const query: RowsQuery = { ...base };
      if (q.limit !== undefined) query.limit = q.limit as number;
      if (q.columns !== undefined) query.columns = q.columns as RowsQuery["columns"];
      if (q.sort !== undefined) query.sort = q.sort as RowsQuery["sort"];
      if (q.offset !== undefined) query.offset = q.offset as number;
      const r = await store.queryRows(namespaceId, query);
      return {
        id: r.queryId,
        data: rowsData(r.meta, r.data, {
          rows_before_limit_at_least: r.actualNumberOfRows,
          wasRowLimitExceeded: r.wasRowLimitExceeded,
          actualNumberOfRows: r.actualNumberOfRows,
          durationInNanoseconds: r.durationInNanoseconds,
        }),
      };
    }
    case "histogram": {
      const latency = (want.query as { latency?: unknown } | null)?.latency === true;
      const r = await store.histogram(namespaceId, { ...baseOf(want.query, want.filterText), latency });
      const meta = ["timeMs", "count", "serverErrors", "clientErrors", ...(latency ? ["p50", "p95", "p99"] : [])];
      return {
        id: r.queryId,
        data: rowsData(meta, r.buckets, {
          rows_before_limit_at_least: r.buckets.length,
          wasRowLimitExceeded: false,
          actualNumberOfRows: r.buckets.length,
          durationInNanoseconds: r.durationInNanoseconds,
          bucketMs: r.bucketMs,
          startMs: r.startMs,
          total: r.total,
        }),
      };
    }
    case "endpoints": {
      const q = want.query as Record<string, unknown>;
      const query: EndpointsQuery = { ...baseOf(want.query, want.filterText) };
      if (q.limit !== undefined) query.limit = q.limit as number;
      if (q.rankOfMicros !== undefined) query.rankOfMicros = q.rankOfMicros as number;
      if (q.sparklinePoints !== undefined) query.sparklinePoints = q.sparklinePoints as number;
      if (q.isWhole !== undefined) query.isWhole = q.isWhole === true;
      const r = await store.endpoints(namespaceId, query);
      return {
        id: r.queryId,
        data: rowsData(endpointColumns, r.rows, {
          rows_before_limit_at_least: r.rows.length,
          wasRowLimitExceeded: r.wasRowLimitExceeded,
          actualNumberOfRows: r.rows.length,
          durationInNanoseconds: r.durationInNanoseconds,
          quantiles: r.quantiles,
          sparklineStartMs: r.sparklineStartMs,
          sparklineStepMs: r.sparklineStepMs,
        }),
      };
    }
    case "event": {
      if (typeof want.eventId !== "string" || !isUuid(want.eventId)) throw new QueryInputError("invalid event id");
      const started = performance.now();
      const r = await store.getEvent(namespaceId, want.eventId);
      const data = r ? [r.event as unknown as Record<string, unknown>] : [];
      return {
        id: r?.queryId ?? null,
        data: {
          meta: r ? Object.keys(r.event) : [],
          data,
          rows_before_limit_at_least: data.length,
          wasRowLimitExceeded: false,
          actualNumberOfRows: data.length,
          durationInNanoseconds: r?.durationInNanoseconds ?? Math.round((performance.now() - started) * 1e6),
          children: r?.children ?? [],
        },
      };
    }
    case "events": {
      const ids = want.eventIds;
      if (!Array.isArray(ids) || ids.length > maxEventsPerRequest || !ids.every(isUuid)) {
        throw new QueryInputError(`eventIds must be at most ${maxEventsPerRequest} event ids`);
      }
      const started = performance.now();
      const range = want.range as { lowerMs?: unknown; upperMs?: unknown } | undefined;
      const bounded =
        range && typeof range.lowerMs === "number" && typeof range.upperMs === "number"
          ? { lowerMs: range.lowerMs, upperMs: range.upperMs }
          : undefined;
      const byId = new Map((await store.getEvents(namespaceId, ids, bounded)).map((e) => [e.event_id, e]));
      const found = ids.flatMap((id) => byId.get(id) ?? []);
      return {
        id: null,
        data: {
          meta: found[0] ? Object.keys(found[0]) : [],
          data: found as unknown as Record<string, unknown>[],
          rows_before_limit_at_least: found.length,
          wasRowLimitExceeded: false,
          actualNumberOfRows: found.length,
          durationInNanoseconds: Math.round((performance.now() - started) * 1e6),
        },
      };
    }
    case "insert": {
      if (!Array.isArray(want.events)) throw new QueryInputError("events must be a list");
      const started = performance.now();
      const events: TracedEvent[] = [];
      let refused = 0;
      for (const raw of want.events) {
        const v = validateEvent(raw);
        if (!v.ok) {
          refused++;
          continue;
        }
        searchTexts.fill(v.event);
        events.push(v.event);
      }
      await store.insert(namespaceId, events);
      return {
        id: null,
        data: {
          meta: ["inserted", "refused"],
          data: [{ inserted: events.length, refused }],
          rows_before_limit_at_least: 1,
          wasRowLimitExceeded: false,
          actualNumberOfRows: 1,
          durationInNanoseconds: Math.round((performance.now() - started) * 1e6),
        },
      };
    }
    default:
      throw new QueryInputError(`unknown request kind "${String((want as { kind?: unknown }).kind)}"`);
  }
}

/** Which kinds a role may send: SELECT only reads, INSERT only writes. */
export function isAllowedFor(role: TunnelRole, kind: unknown): boolean {
  if (role === "INSERT") return kind === "insert";
  return kind === "rows" || kind === "histogram" || kind === "endpoints" || kind === "event" || kind === "events";
}

/**
 * Runs one tunnel request against a namespace of a store (the server's own, or a worker's) and encodes
 * the result. The namespace comes from the caller (the tunnel's binding), never from the message.
 * Query mistakes and the store's limits (timeout, concurrency) come back as database errors.
 */
export async function executeRequest({
  store,
  namespaceId,
  role,
  request,
}: {
  store: EventStore;
  namespaceId: string;
  role: TunnelRole;
  request: TunnelRequest;
}): Promise<TunnelResult> {
  const kind = (request.want as { kind?: unknown }).kind;
  if (!isAllowedFor(role, kind)) {
    return errorResult(request.queryId, {
      tunnelError: `${role} tunnels cannot send "${String(kind)}" requests`,
    });
  }
  try {
    const { id, data } = await run(store, namespaceId, request);
    return {
      queryId: request.queryId,
      tunnelError: null,
      databaseQueryId: id,
      databaseError: null,
      compression: request.compression,
      data: await encodeResultData(request.compression, data),
    };
  } catch (err) {
    if (err instanceof QueryInputError || err instanceof AppError) {
      return errorResult(request.queryId, { databaseError: err.message });
    }
    log.error("tunnel query failed", { err, namespaceId, kind });
    return errorResult(request.queryId, { databaseError: "query failed" });
  }
}
