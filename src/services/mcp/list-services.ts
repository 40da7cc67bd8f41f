import { type ListServicesInput, mcpLimits } from "~/lib/protocol/mcp.ts";
import { type McpDeps, rangeOf, runQuery } from "./namespace-query.ts";

export type ServicesAnswer = {
  range: { from: string; to: string };
  services: Array<{ service: string; inbound: number; outbound: number; failed: number; last_seen: string }>;
  /** True when the range held more requests than were read (the newest ones were): counts are of those. */
  is_sampled: boolean;
  requests_read: number;
  requests_matched: number;
};

/**
 * list_services: the services of the namespace over a range, from its newest requests (at most maxServiceRows read:
 * the store has no grouped query, and a tool call must stay cheap).
 */
export async function listServices(deps: McpDeps, input: ListServicesInput): Promise<ServicesAnswer> {
  const range = rangeOf(input, deps.now());
  const data = await runQuery(deps, {
    kind: "rows",
    query: {
      filter: { clauses: [], global: range, focus: null },
      limit: mcpLimits.maxServiceRows,
      columns: ["time", "event_id", "service", "http_is_outgoing", "http_resp_status_code", "protocol"],
    },
  });
  const byName = new Map<string, { inbound: number; outbound: number; failed: number; lastMicros: number }>();
  for (const row of data.data) {
    const name = typeof row.service === "string" ? row.service : "";
    let s = byName.get(name);
    if (!s) {
      s = { inbound: 0, outbound: 0, failed: 0, lastMicros: 0 };
      byName.set(name, s);
    }
    if (row.http_is_outgoing === true || row.http_is_outgoing === 1) s.outbound++;
    else s.inbound++;
    const status = Number(row.http_resp_status_code) || 0;
    if (row.protocol !== "tcp" && (status === 0 || status >= 500)) s.failed++;
    s.lastMicros = Math.max(s.lastMicros, Number(row.time) || 0);
  }
  return {
    range: { from: new Date(range.lowerMs).toISOString(), to: new Date(range.upperMs).toISOString() },
    services: [...byName.entries()]
      .map(([service, s]) => ({
        service: service || "(unnamed)",
        inbound: s.inbound,
        outbound: s.outbound,
        failed: s.failed,
        last_seen: new Date(s.lastMicros / 1000).toISOString(),
      }))
      .sort((a, b) => b.inbound + b.outbound - (a.inbound + a.outbound)),
    is_sampled: data.wasRowLimitExceeded,
    requests_read: data.data.length,
    requests_matched: data.actualNumberOfRows,
  };
}
