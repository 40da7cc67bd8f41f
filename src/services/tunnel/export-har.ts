import { fullGC } from "bun:jsc";
import { randomUUID } from "node:crypto";
import type { ExportSlots } from "~/engines/limits/export-slots.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { harEntryIds, harPageIds, harRowColumns, harStream, storedBodyBytes } from "~/lib/har.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData, type TunnelResultData, type TunnelWant } from "~/lib/protocol/tunnel.ts";
import { memoryShares } from "~/lib/server/env.ts";
import { buildInfo } from "~/lib/server/version.ts";
import { checkTimeRange } from "~/lib/time/bounds.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { principalKey } from "~/services/tunnel/create-tunnel.ts";
import type { HarTexts } from "./har-entry-texts.ts";
import { writeHarEntries } from "./har-writer.ts";

function request(namespaceId: string, orgId: string, want: TunnelWant): Parameters<WorkerRegistry["dispatch"]>[0] {
  return {
    namespaceId,
    orgId,
    role: "SELECT",
    request: { queryId: randomUUID(), tags: { namespaceId, orgId }, compression: "none", want },
  };
}

async function ask(workers: WorkerRegistry, namespaceId: string, orgId: string, want: TunnelWant): Promise<TunnelResultData> {
  const result = decodeResult(await workers.dispatch(request(namespaceId, orgId, want)));
  if (result.tunnelError) throw new AppError("UNAVAILABLE", result.tunnelError);
  if (result.databaseError) throw new AppError("BAD_REQUEST", result.databaseError);
  return decodeResultData(result);
}

/**
 * The tunnel reply of each page of large bodies still leaves several copies of them on this thread as garbage (the
 * store's text, the reply's JSON and bytes), which the collector, left to itself, frees too late: three concurrent
 * exports of 100 requests with 1 MiB bodies grew the server by 150-450 MB. A full collection once every 16 MiB
 * of bodies fetched by all exports keeps that at 30-100 MB (tests/api/tunnel/har-memory.test.ts). JSC's own full
 * collection pauses for about 20 ms here; Bun.gc(true) also throws away compiled code and took 30-60 ms.
 */
const collectEveryBytes = 16 * 1024 * 1024;
let bytesSinceCollect = 0;
function collectAfterLargePages(bytes: number): void {
  bytesSinceCollect += bytes;
  if (bytesSinceCollect < collectEveryBytes) return;
  bytesSinceCollect = 0;
  fullGC();
}

/**
 * The most body bytes (by the rows' sizes) a page of the export fetches. The store's read of a page and its tunnel
 * reply are made on the event loop in one turn, about 5 ms per MiB of bodies: pages of 1 MiB keep each such turn
 * short and its garbage young. Against pages of 4 MiB, the three exports above finished in 1.6 s instead of 2.5 s,
 * and /api/health answered in under 25 ms instead of up to 80 ms.
 */
const pageBytes = 1024 * 1024;

/**
 * Pages of full events are fetched one at a time across all exports: each holds up to a page of bodies in the
 * store's memory at once, and three concurrent exports of 1 MiB bodies ran DuckDB out of its memory share ("Out of
 * Memory Error", the export cut short) on a server with the default MEMORY_LIMIT. One at a time, the exports still
 * advance together, a page each in turn.
 */
let pageTurn: Promise<unknown> = Promise.resolve();
function inTurn<T>(fetchPage: () => Promise<T>): Promise<T> {
  const page = pageTurn.then(fetchPage, fetchPage);
  pageTurn = page.catch(() => {});
  return page;
}

/**
 * Full events for the HAR, as its entries' text: the result frame goes to the HAR writer's thread undecoded
 * (writeHarEntries), so the event loop never holds the page's events as objects nor turns them into text.
 */
async function entriesOf(workers: WorkerRegistry, namespaceId: string, orgId: string, want: TunnelWant, ids?: string[]): Promise<HarTexts> {
  return writeHarEntries({ frame: await workers.dispatch(request(namespaceId, orgId, want)), ids });
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
  slots,
  principal,
  namespaceId,
  selection,
  maxBytes,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  /** Places for exports of a query's rows (one request's HAR is one page and needs none); absent: unlimited. */
  slots?: ExportSlots;
  principal: Principal;
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
    let detail = await entriesOf(workers, namespaceId, orgId, { kind: "event", eventId: selection.eventId });
    // A WebSocket message is exported as its connection: the handshake with all its messages.
    if (detail.webSocketHandshake)
      detail = await entriesOf(workers, namespaceId, orgId, { kind: "event", eventId: detail.webSocketHandshake });
    if (!detail.isFound) throw new AppError("NOT_FOUND", "request not found");
    return { har: harStream([detail].values(), options), filename: `tapscope-${selection.eventId}.har` };
  }
  const release = slots ? await slots.acquire(principalKey(principal)) : () => {};
  if (!release) {
    throw new AppError("RATE_LIMITED", "too many HAR exports at once: wait for one to finish, then try again", { retryAfterMs: 5_000 });
  }
  try {
    const { har, filename } = await exportRows({ ctx, workers, namespaceId, orgId, name: access.name, selection, options });
    return { har: whenDone(har, release), filename };
  } catch (err) {
    release();
    throw err;
  }
}

/** The stream, calling `done` once when it ends, fails or its reader cancels it (the export's place is given back). */
function whenDone(stream: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  let isDone = false;
  const finish = () => {
    if (isDone) return;
    isDone = true;
    done();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            finish();
            controller.close();
          } else controller.enqueue(next.value);
        } catch (err) {
          finish();
          controller.error(err);
        }
      },
      async cancel(reason) {
        finish();
        await reader.cancel(reason);
      },
    },
    // Nothing read ahead: the export's stream fetches a page only when its reader takes what is queued.
    { highWaterMark: 0 },
  );
}

async function exportRows({
  ctx,
  workers,
  namespaceId,
  orgId,
  name,
  selection,
  options,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  namespaceId: string;
  orgId: string;
  name: string;
  selection: { filter: QueryFilter; filterText?: string; limit?: number };
  options: { version: string; maxBytes: number; hint: string };
}): Promise<{ har: ReadableStream<Uint8Array>; filename: string }> {
  const rows = await ask(workers, namespaceId, orgId, {
    kind: "rows",
    query: {
      filter: selection.filter,
      limit: selection.limit,
      columns: ["time", "event_id", ...harRowColumns],
    },
    filterText: selection.filterText,
  });
  // Rows come newest first; a HAR reads oldest first (ties within a millisecond keep this order).
  const { ids, rows: entryRows, handshakes } = harEntryIds(rows.data.toReversed());
  const sizeOf = (i: number) => storedBodyBytes(entryRows[i] ?? {});
  const isAlone = (i: number) => handshakes.has(ids[i] ?? "");
  const range = selection.filter.focus ?? selection.filter.global;
  async function* pages(): AsyncGenerator<HarTexts> {
    for (const page of harPageIds(ids, { sizeOf, pageBytes, isAlone })) {
      collectAfterLargePages(page.bytes);
      const [first = ""] = page.ids;
      // A WebSocket's handshake comes with its messages (the event's children), which go on its entry.
      yield await inTurn(() =>
        handshakes.has(first)
          ? entriesOf(workers, namespaceId, orgId, { kind: "event", eventId: first })
          : entriesOf(workers, namespaceId, orgId, { kind: "events", eventIds: page.ids, range }, page.ids),
      );
    }
  }
  const filename = `tapscope-${name}-${new Date(ctx.now()).toISOString().replace(/[:.]/g, "-")}.har`;
  return { har: harStream(pages(), { ...options, total: ids.length }), filename };
}
