import { randomUUID } from "node:crypto";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import type { EndpointRow } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData } from "~/lib/protocol/tunnel.ts";
import type { QueryEndpoints } from "./evaluate-alert-rules.ts";

/**
 * The alerts' queries go where the namespace's events are, as a tunnel's would: the local store, the org's
 * self-hosted worker, or the node of the cluster that holds its socket (worker routing). A structured query, never SQL.
 */
export function queryThroughWorkers(workers: WorkerRegistry): QueryEndpoints {
  return async ({ namespaceId, orgId }, want) => {
    const frame = await workers.dispatch({
      namespaceId,
      orgId,
      role: "SELECT",
      request: { queryId: `alert-${randomUUID()}`, tags: { namespaceId, orgId }, compression: "none", want },
    });
    const result = decodeResult(frame);
    if (result.tunnelError || result.databaseError) throw new Error(result.tunnelError ?? result.databaseError ?? "query failed");
    return (await decodeResultData(result)).data as EndpointRow[];
  };
}
