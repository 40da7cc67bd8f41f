import type { FilterExpr } from "~/lib/filter/ast.ts";
import { specColumns, type TracedEvent } from "~/lib/protocol/event.ts";

/**
 * Queries against a namespace's events: what the dashboard, `tapscope query` and the tunnel send.
 * Never SQL: a filter object the store compiles for its engine.
 * Times are milliseconds since the Unix epoch (fractions allowed down to the microsecond).
 */

export const numberOps = ["Equals", "GreaterThan", "GreaterThanOrEquals", "LesserThan", "LesserThanOrEquals", "NotEquals"] as const;
export type NumberOp = (typeof numberOps)[number];

export const stringOps = ["Equals", "DoesNotEqual", "Like", "NotLike"] as const;
export type StringOp = (typeof stringOps)[number];

/** Columns a clause may name: the event columns, by type. Anything else is refused. */
export const numberColumns = [
  "process_id",
  "process_executable_size",
  "http_duration",
  "http_req_body_size_bytes_wire",
  "http_req_content_length",
  "http_resp_status_code",
  "http_resp_body_size_bytes_wire",
  "http_resp_content_length",
  "http_is_outgoing",
] as const;
export type NumberColumn = (typeof numberColumns)[number];

export const stringColumns = [
  "event_id",
  "service",
  "hostname",
  "gcp_project",
  "kubernetes_namespace",
  "gke_cluster_location",
  "gke_cluster_name",
  "gke_node_name",
  "process_executable_name",
  "process_command_line",
  "process_user",
  "protocol",
  "tls_server_name",
  "http_version",
  "http_client_addr",
  "http_server_addr",
  "http_req_method",
  "http_req_path",
  "http_req_transfer_encoding",
  "http_req_content_type",
  "http_req_content_encoding",
  "http_req_host",
  "http_req_x_forwarded_for",
  "http_resp_transfer_encoding",
  "http_resp_content_type",
  "http_resp_content_encoding",
] as const;
export type StringColumn = (typeof stringColumns)[number];

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

export type RowsQuery = QueryBase & {
  /** At most maxRowLimit (the default). */
  limit?: number;
  /**
   * Which row columns to return (time and event_id always come); all of rowColumns when absent.
   * The explorer's list asks for listColumns: fewer bytes to read, move and parse.
   */
  columns?: RowColumn[];
};

export type RowColumn = (typeof rowColumns)[number];

/** One row of a result page: the event columns plus parent_event_id. */
export type EventRow = Pick<TracedEvent, RowColumn>;

/** A row as returned: the columns named in the result's meta (always time and event_id). */
export type ResultRow = Partial<EventRow> & Pick<EventRow, "time" | "event_id">;

const [timeColumn, eventIdColumn, ...otherSpecColumns] = specColumns;
/** tags come last: what an event's TLS state is read from (tags.tls, tags.tls_reason). */
export const rowColumns = [timeColumn, eventIdColumn, "parent_event_id", ...otherSpecColumns, "tags"] as const satisfies ReadonlyArray<
  keyof TracedEvent
>;

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
] as const satisfies ReadonlyArray<RowColumn>;

export type ResultBase = {
  queryId: string;
  durationInNanoseconds: number;
};

export type RowsResult = ResultBase & {
  meta: string[];
  /** Newest first; each row holds the columns of meta. */
  data: ResultRow[];
  wasRowLimitExceeded: boolean;
  /** How many rows matched in all (exact), even when only `limit` came back. */
  actualNumberOfRows: number;
};

export type HistogramQuery = QueryBase;

export type HistogramBucket = {
  /** Bucket start, ms since the epoch. */
  timeMs: number;
  count: number;
  /** Of count: response status >= 500 (0 = no response is not an error here). */
  serverErrors: number;
  /** Of count: response status 400..499. */
  clientErrors: number;
};

export type HistogramResult = ResultBase & {
  bucketMs: number;
  /** Start of the first bucket (the global lower bound snapped down to bucketMs). */
  startMs: number;
  /** The buckets from the one holding the global lower bound to the one holding the upper (at most 121), oldest first, empty ones included. */
  buckets: HistogramBucket[];
  total: number;
};

export type EventDetail = ResultBase & {
  event: TracedEvent;
  /** Outbound calls made while this request was in flight, oldest first. */
  children: TracedEvent[];
};
