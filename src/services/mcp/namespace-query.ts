import { randomUUID } from "node:crypto";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { eventUrl } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { RowColumn } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData, type TunnelResultData, type TunnelWant } from "~/lib/protocol/tunnel.ts";
import { timeRangeProblem } from "~/lib/time/bounds.ts";

/** A tool call the agent can correct (a bad filter, an empty range, an unknown id): its text goes back as the tool's error. */
export class McpToolError extends Error {
  override name = "McpToolError";
}

/** Who the MCP caller is: a namespace token, resolved on every request. */
export type McpCaller = { namespaceId: string; orgId: string; tokenId: string };

/** What a tool reads with: the org's store through worker routing, as every tunnel query does (its limits included). */
export type McpDeps = { workers: WorkerRegistry; caller: McpCaller; now: () => number };

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The time range of a tool's `since` / `from` / `to`, checked as every range entering the server is. */
export function rangeOf(input: { since?: string; from?: string; to?: string }, nowMs: number): { lowerMs: number; upperMs: number } {
  const parse = (text: string, what: string) => {
    const ms = Date.parse(text);
    if (!Number.isFinite(ms)) throw new McpToolError(`${what} must be an ISO 8601 time such as 2026-11-21T09:00:00Z, got "${text}"`);
    return Math.round(ms);
  };
  const upperMs = input.to ? parse(input.to, "to") : Math.ceil(nowMs / 1000) * 1000;
  let lowerMs: number;
  if (input.from) lowerMs = parse(input.from, "from");
  else {
    const m = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(input.since ?? "1h");
    if (!m) throw new McpToolError(`since must look like 30s, 15m, 1h or 2d, got "${input.since}"`);
    lowerMs = upperMs - Math.round(Number(m[1]) * (units[m[2] ?? "h"] ?? 0));
  }
  const problem = timeRangeProblem({ lowerMs, upperMs }, nowMs);
  if (problem) throw new McpToolError(`the time range ${problem}`);
  return { lowerMs, upperMs };
}

/** Runs a read on the caller's namespace; the store's and the tunnel's refusals become the tool's error text. */
export async function runQuery(deps: McpDeps, want: TunnelWant): Promise<TunnelResultData> {
  const { namespaceId, orgId } = deps.caller;
  const frame = await deps.workers.dispatch({
    namespaceId,
    orgId,
    role: "SELECT",
    request: { queryId: `mcp-${randomUUID()}`, tags: {}, compression: "none", want },
  });
  const result = decodeResult(frame);
  if (result.tunnelError) throw new McpToolError(result.tunnelError);
  if (result.databaseError) throw new McpToolError(result.databaseError);
  return decodeResultData(result);
}

/** A request in one line's worth of fields: what searches answer. */
export type RequestSummary = {
  event_id: string;
  time: string;
  service: string;
  direction: "inbound" | "outbound";
  protocol: string;
  method: string;
  url: string;
  status: number | null;
  duration_ms: number;
  parent_event_id: string | null;
};

const text = (v: unknown) => (typeof v === "string" ? v : "");
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : Number(v) || 0);

export function summaryOf(row: Record<string, unknown>): RequestSummary {
  const tags = typeof row.tags === "object" && row.tags !== null && !Array.isArray(row.tags) ? (row.tags as Record<string, string>) : {};
  const isOutgoing = row.http_is_outgoing === true || row.http_is_outgoing === 1;
  const status = num(row.http_resp_status_code);
  return {
    event_id: text(row.event_id),
    time: new Date(num(row.time) / 1000).toISOString(),
    service: text(row.service),
    direction: isOutgoing ? "outbound" : "inbound",
    protocol: text(row.protocol) || "http",
    method: text(row.http_req_method),
    url: eventUrl({
      protocol: row.protocol === "tcp" ? "tcp" : "http",
      http_is_outgoing: isOutgoing,
      http_req_host: text(row.http_req_host),
      http_req_path: text(row.http_req_path),
      http_req_method: text(row.http_req_method),
      tls_server_name: text(row.tls_server_name),
      http_server_addr: text(row.http_server_addr),
      tags,
    }),
    status: status > 0 ? status : null,
    duration_ms: Math.round(num(row.http_duration) / 10) / 100,
    parent_event_id: text(row.parent_event_id) || null,
  };
}

/** The row columns a summary reads (the field table's row fields, so a renamed field fails to compile here). */
export const summaryColumns = [
  "time",
  "event_id",
  "parent_event_id",
  "service",
  "protocol",
  "http_is_outgoing",
  "http_req_method",
  "http_req_host",
  "http_req_path",
  "tls_server_name",
  "http_server_addr",
  "http_resp_status_code",
  "http_duration",
  "tags",
] as const satisfies ReadonlyArray<RowColumn>;

export function eventSummary(e: TracedEvent): RequestSummary {
  return summaryOf(e as unknown as Record<string, unknown>);
}
