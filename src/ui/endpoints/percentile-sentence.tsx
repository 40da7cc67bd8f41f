import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import type { QueryClient } from "~/ui/explorer/query-client.ts";
import { useQuery } from "~/ui/explorer/use-query.ts";
import { endpointClauses, endpointFilterText } from "./endpoints-table.tsx";

/** Where a request's duration sits among its endpoint's requests of the range: "slower than 97 % of GET /users/{id}". */
export function PercentileSentence({ client, event, filter }: { client: QueryClient; event: TracedEvent; filter: QueryFilter }) {
  const duration = event.http_duration;
  const route = event.http_route;
  const isRanked = event.protocol === "http" && !!route && typeof duration === "number" && Number.isSafeInteger(duration) && duration >= 0;
  const isOutgoing = !!event.http_is_outgoing;
  const range: QueryFilter = {
    clauses: endpointClauses({ service: event.service ?? "", isOutgoing, host: event.http_req_host ?? "" }),
    global: filter.global,
    focus: filter.focus,
  };
  const text = isRanked ? endpointFilterText({ method: event.http_req_method ?? "", route: route ?? "" }) : "";
  const key = isRanked ? JSON.stringify([event.event_id, range, text]) : null;
  const rank = useQuery(key, (signal) => client.endpoints(range, text, { rankOfMicros: duration, limit: 1 }, signal));
  if (!isRanked || rank.status !== "done") return null;
  const row = rank.data.rows[0];
  if (!row || row.requests < 2 || row.faster === undefined) return null;
  const share = Math.floor((100 * row.faster) / row.requests);
  return (
    <p data-testid="percentile-sentence" className="border-b border-zinc-800 px-3 py-1.5 text-xs text-zinc-400">
      Slower than <span className="font-semibold text-zinc-100">{share} %</span> of {event.http_req_method}{" "}
      {isOutgoing ? event.http_req_host : ""}
      {route} in this range ({row.requests.toLocaleString("en-US")} requests)
    </p>
  );
}
