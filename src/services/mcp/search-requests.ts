import { parseFilter } from "~/lib/filter/parse.ts";
import { mcpLimits, type SearchRequestsInput } from "~/lib/protocol/mcp.ts";
import type { Clause } from "~/lib/protocol/query.ts";
import { type McpDeps, McpToolError, type RequestSummary, rangeOf, runQuery, summaryColumns, summaryOf } from "./namespace-query.ts";

export type SearchAnswer = {
  range: { from: string; to: string };
  /** How many requests matched in all (only `requests.length` of them, the newest, are listed). */
  matched: number;
  requests: RequestSummary[];
};

/** search_requests: the filter language and a time range over the caller's namespace, newest first, bounded. */
export async function searchRequests(deps: McpDeps, input: SearchRequestsInput): Promise<SearchAnswer> {
  const range = rangeOf(input, deps.now());
  const filterText = input.filter?.trim() ?? "";
  if (filterText) {
    // Checked here too, so the agent gets the position in the same words the CLI prints.
    const parsed = parseFilter(filterText);
    if (!parsed.ok) throw new McpToolError(`filter: ${parsed.error.message} (at position ${parsed.error.position})`);
  }
  const clauses: Clause[] = input.service ? [{ type: "String", column: "service", op: "Equals", value: input.service }] : [];
  const limit = Math.min(input.limit ?? mcpLimits.defaultSearchResults, mcpLimits.maxSearchResults);
  const data = await runQuery(deps, {
    kind: "rows",
    query: { filter: { clauses, global: range, focus: null }, limit, columns: [...summaryColumns] },
    filterText: filterText || undefined,
  });
  return {
    range: { from: new Date(range.lowerMs).toISOString(), to: new Date(range.upperMs).toISOString() },
    matched: data.actualNumberOfRows,
    requests: data.data.map(summaryOf),
  };
}
