import type { RecentErrorsInput } from "~/lib/protocol/mcp.ts";
import type { McpDeps } from "./namespace-query.ts";
import { type SearchAnswer, searchRequests } from "./search-requests.ts";

/** recent_errors: the newest failed requests (status >= min_status, default 500). */
export function recentErrors(deps: McpDeps, input: RecentErrorsInput): Promise<SearchAnswer> {
  const minStatus = input.min_status ?? 500;
  return searchRequests(deps, {
    since: input.since,
    from: input.from,
    to: input.to,
    limit: input.limit,
    filter: `response.status >= ${minStatus}`,
  });
}
