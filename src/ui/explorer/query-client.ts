import { errorMessage } from "~/lib/errors.ts";
import type { CreateTunnelResponse } from "~/lib/protocol/api/tunnel.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import {
  type EndpointRow,
  type EndpointsQuery,
  type HistogramBucket,
  listColumns,
  type QuantileMethod,
  type QueryFilter,
  type ResultRow,
  type RowSort,
} from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData, encodeRequest, type TunnelResultData, type TunnelWant } from "~/lib/protocol/tunnel.ts";
import { api, describeError } from "~/ui/lib/api.ts";
import { reportEvent } from "~/ui/lib/events.ts";

/** The query connection's states: not started, pending, open, failed or cancelled. */
export type ConnectionState = "idle" | "pending" | "open" | "failed" | "cancelled";

export type RowsAnswer = {
  rows: ResultRow[];
  wasRowLimitExceeded: boolean;
  actualNumberOfRows: number;
  durationInNanoseconds: number;
};
export type HistogramAnswer = {
  bucketMs: number;
  startMs: number;
  buckets: HistogramBucket[];
  total: number;
};
export type EndpointsAnswer = {
  rows: EndpointRow[];
  wasRowLimitExceeded: boolean;
  quantiles: QuantileMethod;
  sparklineStartMs: number;
  sparklineStepMs: number;
};
export type EndpointsOptions = Pick<EndpointsQuery, "limit" | "rankOfMicros" | "sparklinePoints">;
export type DetailAnswer = {
  event: TracedEvent;
  children: TracedEvent[];
} | null;

/** What the explorer needs from a query transport: one file to swap. */
export type QueryClient = {
  /**
   * The store sorts the whole range (newest first by default) and returns up to maxRowLimit rows of that order,
   * after skipping `offset` of them (0 to maxRowOffset).
   */
  rows(filter: QueryFilter, filterText: string, signal?: AbortSignal, sort?: RowSort, offset?: number): Promise<RowsAnswer>;
  /** latency: each bucket also carries its p50/p95/p99 (the histogram's percentile lines). */
  histogram(filter: QueryFilter, filterText: string, signal?: AbortSignal, latency?: boolean): Promise<HistogramAnswer>;
  /** The Endpoints table over the filter's range (its focus when set). */
  endpoints(filter: QueryFilter, filterText: string, options: EndpointsOptions, signal?: AbortSignal): Promise<EndpointsAnswer>;
  detail(eventId: string, signal?: AbortSignal): Promise<DetailAnswer>;
  events(eventIds: string[], signal?: AbortSignal): Promise<TracedEvent[]>;
  close(): void;
};

/** A query that failed, in words for the person (`message`), with the status and trace id for support (`details`). */
export class QueryFailure extends Error {
  override name = "QueryFailure";
  constructor(
    message: string,
    readonly details: string | null = null,
  ) {
    super(message);
  }
}

type Pending = {
  resolve: (d: TunnelResultData) => void;
  reject: (e: Error) => void;
};

let seq = 0;
const nextQueryId = () => `q${Date.now().toString(36)}${(seq++).toString(36)}`;

/**
 * The explorer's query tunnel: CreateTunnel {namespaceId, role: SELECT}, then binary
 * request/result frames on the returned WebSocket. The socket opens on the first query. An abnormal close
 * is reported (TunnelWebSocketClosed) and resets the connection, so the next query opens a fresh tunnel;
 * queries in flight at that moment are retried once on it. A normal close (ours) resets nothing.
 */
export function tunnelQueryClient(namespaceId: string, onState: (s: ConnectionState) => void = () => {}): QueryClient {
  let socket: Promise<WebSocket> | null = null;
  let closedByUs = false;
  const pending = new Map<string, Pending>();

  const setState = (s: ConnectionState) => onState(s);

  function connect(): Promise<WebSocket> {
    if (socket) return socket;
    setState("pending");
    const opening = (async () => {
      let answer: CreateTunnelResponse;
      try {
        answer = await api("CreateTunnel", {
          namespaceId,
          role: "SELECT",
        });
        if (answer.error) throw new Error(answer.error);
      } catch (err) {
        void reportEvent("CreateTunnelFailure", {
          error_message: errorMessage(err),
        });
        const { message, details } = describeError(err);
        throw new QueryFailure(`Could not open the query tunnel. ${message}`, details);
      }
      const ws = new WebSocket(answer.endpoint);
      ws.binaryType = "arraybuffer";
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new QueryFailure("The query tunnel could not connect."));
      });
      ws.onmessage = (e) => void onMessage(e.data as ArrayBuffer);
      ws.onclose = (e) => {
        if (socket !== opening) return;
        socket = null;
        const failed = [...pending.values()];
        pending.clear();
        if (closedByUs || e.code === 1000) {
          for (const p of failed) p.reject(new QueryFailure("The query tunnel was closed."));
          return;
        }
        void reportEvent("TunnelWebSocketClosed", {
          code: String(e.code),
          reason: e.reason,
        });
        setState("idle");
        for (const p of failed) p.reject(new QueryFailure("reconnect"));
      };
      setState("open");
      return ws;
    })();
    socket = opening;
    opening.catch(() => {
      if (socket === opening) socket = null;
      setState("failed");
    });
    return opening;
  }

  async function onMessage(data: ArrayBuffer) {
    let result: ReturnType<typeof decodeResult>;
    try {
      result = decodeResult(new Uint8Array(data));
    } catch (err) {
      void reportEvent("TunnelError", {
        error_message: errorMessage(err),
      });
      return;
    }
    const p = pending.get(result.queryId);
    if (!p) return;
    pending.delete(result.queryId);
    if (result.tunnelError || result.databaseError) {
      const text = result.tunnelError ?? result.databaseError ?? "";
      void reportEvent(result.tunnelError ? "TunnelError" : "ClickhouseError", {
        error_message: text,
        query_id: result.queryId,
      });
      p.reject(new QueryFailure(text));
      return;
    }
    try {
      const decoded = await decodeResultData(result);
      p.resolve(decoded);
    } catch (err) {
      p.reject(new QueryFailure(`The result could not be read: ${errorMessage(err)}`));
    }
  }

  async function send(want: TunnelWant, signal: AbortSignal | undefined, retried = false): Promise<TunnelResultData> {
    if (signal?.aborted) throw new DOMException("aborted", "AbortError");
    const ws = await connect();
    const queryId = nextQueryId();
    const frame = await encodeRequest({
      queryId,
      tags: { namespaceId },
      compression: "gzip",
      want,
    });
    try {
      return await new Promise<TunnelResultData>((resolve, reject) => {
        pending.set(queryId, { resolve, reject });
        signal?.addEventListener("abort", () => {
          pending.delete(queryId);
          reject(new DOMException("aborted", "AbortError"));
        });
        ws.send(frame);
      });
    } catch (err) {
      if (err instanceof QueryFailure && err.message === "reconnect") {
        if (retried) throw new QueryFailure("The query tunnel closed unexpectedly.");
        return send(want, signal, true);
      }
      throw err;
    }
  }

  return {
    async rows(filter, filterText, signal, sort, offset) {
      const d = await send(
        {
          kind: "rows",
          query: { filter, columns: [...listColumns], ...(sort ? { sort } : {}), ...(offset ? { offset } : {}) },
          filterText,
        },
        signal,
      );
      return {
        rows: d.data as ResultRow[],
        wasRowLimitExceeded: d.wasRowLimitExceeded,
        actualNumberOfRows: d.actualNumberOfRows,
        durationInNanoseconds: d.durationInNanoseconds,
      };
    },
    async histogram(filter, filterText, signal, latency) {
      const d = await send({ kind: "histogram", query: latency ? { filter, latency } : { filter }, filterText }, signal);
      return {
        bucketMs: d.bucketMs ?? 1000,
        startMs: d.startMs ?? filter.global.lowerMs,
        buckets: d.data as HistogramBucket[],
        total: d.total ?? 0,
      };
    },
    async endpoints(filter, filterText, options, signal) {
      const d = await send({ kind: "endpoints", query: { filter, ...options }, filterText }, signal);
      return {
        rows: d.data as EndpointRow[],
        wasRowLimitExceeded: d.wasRowLimitExceeded,
        quantiles: d.quantiles ?? "exact",
        sparklineStartMs: d.sparklineStartMs ?? filter.global.lowerMs,
        sparklineStepMs: d.sparklineStepMs ?? 0,
      };
    },
    async detail(eventId, signal) {
      const d = await send({ kind: "event", eventId }, signal);
      const event = d.data[0] as TracedEvent | undefined;
      return event ? { event, children: d.children ?? [] } : null;
    },
    async events(eventIds, signal) {
      const d = await send({ kind: "events", eventIds }, signal);
      return d.data as TracedEvent[];
    },
    close() {
      closedByUs = true;
      void socket?.then((ws) => ws.close(1000)).catch(() => {});
      socket = null;
      setState("cancelled");
    },
  };
}
