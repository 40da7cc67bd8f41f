import type { Ingest } from "~/engines/ingest/ingest.ts";
import { encodeResultData, errorResult, type TunnelRequest, type TunnelResult } from "~/lib/protocol/tunnel.ts";

/**
 * An INSERT tunnel's events enter as published events do: through ingest, so the per-message cap, validation and
 * the namespace's rate limit (INGEST_RATE_LIMIT) apply alike, they reach the store (or the org's worker) and the
 * live view by the same sinks, and the answer comes once they are stored. Its one row counts what was inserted,
 * refused (invalid), rate limited (dropped), truncated, and dropped by the store.
 */
export async function insertEvents({
  ingest,
  namespaceId,
  request,
}: {
  ingest: Ingest;
  namespaceId: string;
  request: TunnelRequest;
}): Promise<TunnelResult> {
  const events = (request.want as { events?: unknown }).events;
  if (!Array.isArray(events)) return errorResult(request.queryId, { databaseError: "events must be a list" });
  const started = performance.now();
  const received = ingest.receive({ namespaceId, linkId: null }, { type: "events", seq: 0, events });
  const reply = received.stored ? await received.stored : received.reply;
  if (reply.type === "error") return errorResult(request.queryId, { tunnelError: reply.message });
  if (reply.type !== "ack") return errorResult(request.queryId, { tunnelError: "insert was not accepted" });
  const storeDropped = reply.storeDropped ?? 0;
  const row = {
    inserted: reply.accepted - storeDropped,
    refused: reply.refused,
    rateLimited: reply.rateLimited,
    truncated: reply.truncated,
    storeDropped,
  };
  return {
    queryId: request.queryId,
    tunnelError: null,
    databaseQueryId: null,
    databaseError: null,
    compression: request.compression,
    data: await encodeResultData(request.compression, {
      meta: Object.keys(row),
      data: [row],
      rows_before_limit_at_least: 1,
      wasRowLimitExceeded: false,
      actualNumberOfRows: 1,
      durationInNanoseconds: Math.round((performance.now() - started) * 1e6),
    }),
  };
}
