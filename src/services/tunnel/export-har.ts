import { randomUUID } from "node:crypto";
import { type HarLog, toHarLog } from "~/lib/har.ts";
import { AppError } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData, maxEventsPerRequest, type TunnelResultData, type TunnelWant } from "~/lib/protocol/tunnel.ts";
import { buildInfo } from "~/lib/version.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { WorkerRegistry } from "./worker-registry.ts";

async function ask(workers: WorkerRegistry, namespaceId: string, orgId: string, want: TunnelWant): Promise<TunnelResultData> {
  const frame = await workers.dispatch({
    namespaceId,
    orgId,
    role: "SELECT",
    request: {
      queryId: randomUUID(),
      tags: { namespaceId, orgId },
      compression: "none",
      want,
    },
  });
  const result = decodeResult(frame);
  if (result.tunnelError) throw new AppError("UNAVAILABLE", result.tunnelError);
  if (result.databaseError) throw new AppError("BAD_REQUEST", result.databaseError);
  return decodeResultData(result);
}

/**
 * HAR downloads for the dashboard, through the same worker path as tunnel queries: one request (with its
 * outbound calls), or the rows of a query (newest `limit`, full detail fetched in batches).
 */
export async function exportHar({
  ctx,
  workers,
  principal,
  namespaceId,
  selection,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  principal: Principal | null;
  namespaceId: string;
  selection: { eventId: string } | { filter: QueryFilter; filterText?: string; limit?: number };
}): Promise<{ har: HarLog; filename: string }> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId });
  const { orgId } = access;
  let events: TracedEvent[];
  let filename: string;
  if ("eventId" in selection) {
    const detail = await ask(workers, namespaceId, orgId, {
      kind: "event",
      eventId: selection.eventId,
    });
    const event = detail.data[0] as TracedEvent | undefined;
    if (!event) throw new AppError("NOT_FOUND", "request not found");
    events = [event, ...(detail.children ?? [])];
    filename = `tapscope-${selection.eventId}.har`;
  } else {
    const rows = await ask(workers, namespaceId, orgId, {
      kind: "rows",
      query: {
        filter: selection.filter,
        limit: selection.limit,
        columns: ["time", "event_id"],
      },
      filterText: selection.filterText,
    });
    const ids = rows.data.map((r) => String(r.event_id));
    events = [];
    for (let i = 0; i < ids.length; i += maxEventsPerRequest) {
      const batch = await ask(workers, namespaceId, orgId, {
        kind: "events",
        eventIds: ids.slice(i, i + maxEventsPerRequest),
        range: selection.filter.focus ?? selection.filter.global,
      });
      events.push(...(batch.data as unknown as TracedEvent[]));
    }
    // Rows come newest first; a HAR reads oldest first (ties within a millisecond keep this order).
    events.reverse();
    filename = `tapscope-${access.name}-${new Date(ctx.now()).toISOString().replace(/[:.]/g, "-")}.har`;
  }
  return { har: toHarLog(events, buildInfo.version), filename };
}
