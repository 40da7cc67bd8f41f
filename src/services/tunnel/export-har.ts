import { randomUUID } from "node:crypto";
import { memoryShares } from "~/lib/env.ts";
import { harPages, harSizeColumns, harStream, storedBodyBytes } from "~/lib/har.ts";
import { AppError } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import { checkTimeRange } from "~/lib/time/bounds.ts";
import { decodeResult, decodeResultData, type TunnelResultData, type TunnelWant } from "~/lib/protocol/tunnel.ts";
import { buildInfo } from "~/lib/version.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";

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
 * Each fetched page of large bodies leaves several copies of them as garbage (stored text, tunnel reply, HAR
 * entry, bytes) that the collector, left to itself, frees too late: three concurrent exports of 100 requests with
 * 1 MiB bodies grew the server by over 1 GB. A full collection once every 16 MiB of bodies fetched by all exports
 * keeps the same three within 70-180 MB of where they started (tests/api/har-memory.test.ts), at the cost of
 * pauses of tens of milliseconds; exports of small bodies rarely reach it.
 */
const collectEveryBytes = 16 * 1024 * 1024;
let bytesSinceCollect = 0;
function collectAfterLargePages(bytes: number): void {
  bytesSinceCollect += bytes;
  if (bytesSinceCollect < collectEveryBytes) return;
  bytesSinceCollect = 0;
  Bun.gc(true);
}

/**
 * HAR downloads for the dashboard, through the same worker path as tunnel queries: one request (with its
 * outbound calls), or the rows of a query (newest `limit`). The HAR is a stream: the full events are fetched a
 * page at a time as the client reads (harStream), and it is cut at `maxBytes` (default: a quarter of
 * MEMORY_LIMIT) with a comment saying so.
 */
export async function exportHar({
  ctx,
  workers,
  principal,
  namespaceId,
  selection,
  maxBytes,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  principal: Principal | null;
  namespaceId: string;
  selection: { eventId: string } | { filter: QueryFilter; filterText?: string; limit?: number };
  maxBytes?: number;
}): Promise<{ har: ReadableStream<Uint8Array>; filename: string }> {
  if ("filter" in selection) {
    const nowMs = ctx.now().getTime();
    checkTimeRange(selection.filter.global, "global time range", nowMs);
    if (selection.filter.focus) checkTimeRange(selection.filter.focus, "focus time range", nowMs);
  }
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId });
  const { orgId } = access;
  const options = {
    version: buildInfo.version,
    maxBytes: maxBytes ?? memoryShares(ctx.config.memoryLimitBytes).harMaxBytes,
    hint: "narrow the time range or the filter for the rest (the cap is a quarter of MEMORY_LIMIT)",
  };
  if ("eventId" in selection) {
    const detail = await ask(workers, namespaceId, orgId, {
      kind: "event",
      eventId: selection.eventId,
    });
    const event = detail.data[0] as TracedEvent | undefined;
    if (!event) throw new AppError("NOT_FOUND", "request not found");
    const events = [event, ...(detail.children ?? [])];
    return { har: harStream([events].values(), options), filename: `tapscope-${selection.eventId}.har` };
  }
  const rows = await ask(workers, namespaceId, orgId, {
    kind: "rows",
    query: {
      filter: selection.filter,
      limit: selection.limit,
      columns: ["time", "event_id", ...harSizeColumns],
    },
    filterText: selection.filterText,
  });
  // Rows come newest first; a HAR reads oldest first (ties within a millisecond keep this order).
  const oldestFirst = rows.data.toReversed();
  const ids = oldestFirst.map((r) => String(r.event_id));
  const sizeOf = (i: number) => storedBodyBytes(oldestFirst[i] ?? {});
  const pages = harPages(
    ids,
    async (page, bytes) => {
      const batch = await ask(workers, namespaceId, orgId, {
        kind: "events",
        eventIds: page,
        range: selection.filter.focus ?? selection.filter.global,
      });
      collectAfterLargePages(bytes);
      return batch.data as unknown as TracedEvent[];
    },
    { sizeOf },
  );
  const filename = `tapscope-${access.name}-${new Date(ctx.now()).toISOString().replace(/[:.]/g, "-")}.har`;
  return { har: harStream(pages, { ...options, total: ids.length }), filename };
}
