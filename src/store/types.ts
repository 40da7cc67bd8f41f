import type { TracedEvent } from "~/lib/protocol/event.ts";
import type {
  EndpointsQuery,
  EndpointsResult,
  EventDetail,
  HistogramQuery,
  HistogramResult,
  RowsQuery,
  RowsResult,
  TimestampFilter,
} from "~/lib/protocol/query.ts";
import type { EventRows, StoreLayout } from "./table.ts";

/**
 * The event store: one table per namespace, DuckDB embedded or ClickHouse. Namespace ids are validated
 * UUIDs; queries are query objects compiled by the store, never SQL.
 */
export type EventStore = {
  readonly kind: "duckdb" | "clickhouse";
  /**
   * Events per insert the engine stores most cheaply; the store sink writes batches of this size while events
   * arrive faster than it writes, and smaller ones only when the oldest pending event has waited its interval.
   */
  readonly insertBatchSize: number;
  /** Creates the namespace's table if missing (idempotent). */
  ensureNamespace(namespaceId: string): Promise<void>;
  insert(namespaceId: string, events: readonly TracedEvent[]): Promise<void>;
  /** The same for events already in their stored form (toEventRows): what the store sink buffers. */
  insertRows(namespaceId: string, rows: readonly EventRows[]): Promise<void>;
  queryRows(namespaceId: string, query: RowsQuery): Promise<RowsResult>;
  histogram(namespaceId: string, query: HistogramQuery): Promise<HistogramResult>;
  /** HTTP requests grouped by endpoint (service, direction, outgoing Host, method, route): counts, errors, percentiles. */
  endpoints(namespaceId: string, query: EndpointsQuery): Promise<EndpointsResult>;
  /** One event with full detail and its child events (parent_event_id), or null. */
  getEvent(namespaceId: string, eventId: string): Promise<EventDetail | null>;
  /**
   * Full events of up to 10000 ids in one read (HAR export), optionally within a time range that prunes
   * the scan; missing ids are skipped, order not defined.
   */
  getEvents(namespaceId: string, eventIds: readonly string[], range?: TimestampFilter): Promise<TracedEvent[]>;
  /**
   * Which of up to 10000 event ids the namespace holds, among events timed from `fromMicros` to `toMicros` (both
   * included): how a publisher's resent events are told apart from ones already stored.
   */
  storedEventIds?(namespaceId: string, eventIds: readonly string[], fromMicros: number, toMicros: number): Promise<Set<string>>;
  /** Removes events whose time (microseconds) is before cutoffMicros. */
  deleteOlderThan(namespaceId: string, cutoffMicros: number): Promise<void>;
  /**
   * Keeps `days` of events: native TTL where the engine has it (ClickHouse >= 19.6), otherwise deletes
   * what is older now. Called on a schedule by the retention job.
   */
  applyRetention(namespaceId: string, days: number, nowMs: number): Promise<void>;
  /** Namespace ids that have a table. */
  listNamespaces(): Promise<string[]>;
  dropNamespace(namespaceId: string): Promise<void>;
  close(): Promise<void>;
};

export type StoreLimits = {
  /** A query running longer is cancelled and fails with UNAVAILABLE. */
  queryTimeoutMs: number;
  /** Queries running at once per namespace; more wait in a short queue, beyond it RATE_LIMITED. */
  maxConcurrentQueries: number;
  maxQueuedQueries: number;
};

export const defaultStoreLimits: StoreLimits = {
  queryTimeoutMs: 15_000,
  maxConcurrentQueries: 4,
  maxQueuedQueries: 16,
};

/** What an engine provides; the query logic shared by both lives in sql-store.ts. */
export type Engine = {
  readonly kind: EventStore["kind"];
  readonly dialect: import("./sql/dialect.ts").Dialect;
  readonly insertBatchSize: number;
  /** The columns it stores, from the field table the store was opened with. */
  readonly layout: StoreLayout;
  /**
   * Whether createTable also makes the per-minute Endpoints rollup beside the table (sql/endpoint-rollup.ts) and its
   * deletes keep it in step: ClickHouse.
   */
  readonly hasEndpointRollup?: boolean;
  createTable(table: string): Promise<void>;
  /** One insert of these chunks' rows, in order (SqlEventStore passes only chunks that hold rows). */
  insert(table: string, rows: readonly EventRows[]): Promise<void>;
  /** Runs a generated SELECT; rows as objects keyed by column alias. */
  select(sql: string, options: { timeoutMs: number; queryId: string }): Promise<Record<string, unknown>[]>;
  deleteOlderThan(table: string, cutoffMicros: number): Promise<void>;
  /** Sets a native TTL; false when the engine has none (then the store deletes on schedule). */
  setTtl?(table: string, days: number): Promise<boolean>;
  listTables(): Promise<string[]>;
  dropTable(table: string): Promise<void>;
  close(): Promise<void>;
};
