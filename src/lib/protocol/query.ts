import type { FilterExpr } from "~/lib/filter/ast.ts";
import { type EventFieldName, eventFields, type TracedEvent } from "~/lib/protocol/event.ts";

/**
 * Queries against a namespace's events: what the dashboard, `tapscope query` and the tunnel send.
 * Never SQL: a filter object the store compiles for its engine.
 * Times are milliseconds since the Unix epoch (fractions allowed down to the microsecond).
 */

export const numberOps = ["Equals", "GreaterThan", "GreaterThanOrEquals", "LesserThan", "LesserThanOrEquals", "NotEquals"] as const;
export type NumberOp = (typeof numberOps)[number];

export const stringOps = ["Equals", "DoesNotEqual", "Like", "NotLike"] as const;
export type StringOp = (typeof stringOps)[number];

/** Columns a clause may name, by clause type: the field table's queryable fields. Anything else is refused. */
export type NumberColumn = EventFieldName<{ isQueryable: true; type: "int" | "flag" }>;
export const numberClauseColumns = eventFields.numberClauseColumns as readonly NumberColumn[];

export type StringColumn = EventFieldName<{ isQueryable: true; type: "id" | "kind" | "text" }>;
export const stringClauseColumns = eventFields.stringClauseColumns as readonly StringColumn[];

export type NumberClause = {
  type: "Number";
  column: NumberColumn;
  op: NumberOp;
  value: number;
};
export type StringClause = {
  type: "String";
  column: StringColumn;
  op: StringOp;
  value: string;
};
export type Clause = NumberClause | StringClause;

/** [lowerMs, upperMs): lower bound included, upper excluded. */
export type TimestampFilter = { lowerMs: number; upperMs: number };

/** The filter object, as it lives (base64 JSON) in the explorer's `filter` parameter. */
export type QueryFilter = {
  clauses: Clause[];
  global: TimestampFilter;
  /** The brushed part of the global range; rows come from here when set. */
  focus?: TimestampFilter | null;
};

export type QueryBase = {
  filter: QueryFilter;
  /** Parsed filter-language expressions, all of which must hold. */
  expressions?: FilterExpr[];
  /** Echoed in the result; generated when absent. */
  queryId?: string;
};

export const maxRowLimit = 10_000;

/** The columns the explorer's list sorts by, on the store over the whole range: what the list shows. */
export const rowSortKeys = [
  "time",
  "http_req_method",
  "http_resp_status_code",
  "http_req_path",
  "http_duration",
  "http_resp_body_size_bytes_wire",
] as const;
export type RowSortKey = (typeof rowSortKeys)[number];
export type RowSort = { key: RowSortKey; dir: "asc" | "desc" };
export const defaultRowSort: RowSort = { key: "time", dir: "desc" };

/** The deepest page a query may ask for: a sorted page costs the store a top-N of offset + limit rows. */
export const maxRowOffset = 100_000;

export type RowsQuery = QueryBase & {
  /** At most maxRowLimit (the default). */
  limit?: number;
  /**
   * The order of the whole range's matching rows, ties broken by time then event id in the same direction, so pages
   * never overlap or skip; newest first when absent.
   */
  sort?: RowSort;
  /** Rows of that order skipped before the page: 0 (the default) to maxRowOffset. */
  offset?: number;
  /**
   * Which row columns to return (time and event_id always come); all of the row columns when absent.
   * The explorer's list asks for listColumns: fewer bytes to read, move and parse.
   */
  columns?: RowColumn[];
};

/** What a result row may hold: the field table's fields shown in rows (time and event_id in every row). */
export type RowColumn = EventFieldName<{ shown: "export" | "rows" }>;

/** One row of a result page. */
export type EventRow = Pick<TracedEvent, RowColumn>;

/** A row as returned: the columns named in the result's meta (always time and event_id). */
export type ResultRow = Partial<EventRow> & Pick<EventRow, "time" | "event_id">;

/** What the requests explorer's list shows (the detail comes from getEvent). */
export const listColumns = [
  "time",
  "event_id",
  "parent_event_id",
  "service",
  "http_is_outgoing",
  "http_req_method",
  "http_req_host",
  "http_req_path",
  "http_resp_status_code",
  "http_duration",
  "http_resp_body_size_bytes_wire",
  "protocol",
  "tls_server_name",
  "http_server_addr",
  "tags",
  "db_system",
  "db_statement",
  "db_error_code",
  "ws_direction",
  "ws_opcode",
  "ws_size",
  "http_unanswered",
] as const satisfies ReadonlyArray<RowColumn>;

export type ResultBase = {
  queryId: string;
  durationInNanoseconds: number;
};

export type RowsResult = ResultBase & {
  meta: string[];
  /** In the query's sort (newest first by default); each row holds the columns of meta. */
  data: ResultRow[];
  wasRowLimitExceeded: boolean;
  /** How many rows matched in all (exact), even when only `limit` came back. */
  actualNumberOfRows: number;
};

export type HistogramQuery = QueryBase & {
  /** Each bucket also gets the p50, p95 and p99 of its HTTP requests' durations (the explorer's latency lines). */
  latency?: boolean;
};

export type HistogramBucket = {
  /** Bucket start, ms since the epoch. */
  timeMs: number;
  count: number;
  /** Of count: response status >= 500 (0 = no response is not an error here). */
  serverErrors: number;
  /** Of count: response status 400..499. */
  clientErrors: number;
  /** With `latency`: the bucket's HTTP requests' duration percentiles in microseconds; null when it has none. */
  p50?: number | null;
  p95?: number | null;
  p99?: number | null;
};

export type HistogramResult = ResultBase & {
  bucketMs: number;
  /** Start of the first bucket (the global lower bound snapped down to bucketMs). */
  startMs: number;
  /** The buckets from the one holding the global lower bound to the one holding the upper (at most 121), oldest first, empty ones included. */
  buckets: HistogramBucket[];
  total: number;
};

/** How a store computes percentiles: exactly, or with a bounded error (the engine's sketch, stated in bench/README.md). */
export type QuantileMethod = "exact" | "approximate";

export const endpointLimits = {
  /** Endpoint rows of one answer at most (the busiest first). */
  maxRows: 1000,
  /** Points of a row's latency sparkline at most. */
  maxSparklinePoints: 60,
} as const;

/**
 * The Endpoints table: HTTP requests grouped by service, direction, host (outgoing calls only), method and route,
 * over the query's range and filters.
 */
export type EndpointsQuery = QueryBase & {
  /** Rows at most, the busiest first: 1..endpointLimits.maxRows (the default). */
  limit?: number;
  /** Each row also counts its requests faster than this many microseconds (`faster`): where one request sits. */
  rankOfMicros?: number;
  /** Points of each row's p95 sparkline across the range: 0 (none, the default) to endpointLimits.maxSparklinePoints. */
  sparklinePoints?: number;
  /** One row for every HTTP request the query keeps, not one per endpoint (its key fields are ""): what an alert measures. */
  isWhole?: boolean;
};

export type EndpointRow = {
  service: string;
  isOutgoing: boolean;
  /** An outgoing call's Host; "" for requests the program served. */
  host: string;
  method: string;
  /** "" for requests stored before routes were kept. */
  route: string;
  requests: number;
  /** Responses 400..499 and >= 500. */
  clientErrors: number;
  serverErrors: number;
  /** Duration percentiles and the longest, in microseconds. */
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** Request and response body bytes on the wire, summed. */
  bytesIn: number;
  bytesOut: number;
  /** The p95 of each point of the range (sparklinePoints of them), null where it had no requests. */
  sparkline: Array<number | null>;
  /** With rankOfMicros: the row's requests faster than it. */
  faster?: number;
};

export type EndpointsResult = ResultBase & {
  rows: EndpointRow[];
  /** More endpoints matched than `limit`: the least busy were left out. */
  wasRowLimitExceeded: boolean;
  quantiles: QuantileMethod;
  /** The sparkline's grid: the first point's start and each point's length, in ms. */
  sparklineStartMs: number;
  sparklineStepMs: number;
};

export type EventDetail = ResultBase & {
  event: TracedEvent;
  /** Outbound calls made while this request was in flight, oldest first. */
  children: TracedEvent[];
};
