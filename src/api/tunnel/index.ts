import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ExportSlots } from "~/engines/limits/export-slots.ts";
import type { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { DownloadHarQuery, DownloadHarRequest } from "~/lib/protocol/api/tunnel.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createTunnel, principalKey } from "~/services/tunnel/create-tunnel.ts";
import { exportHar } from "~/services/tunnel/export-har.ts";
import { listOpenTunnels } from "~/services/tunnel/list-open-tunnels.ts";

/** The HAR as it is written (export-har streams it a page of events at a time). */
function attachment(har: ReadableStream<Uint8Array>, filename: string): Response {
  return new Response(har, {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-disposition": `attachment; filename="${filename.replace(/[^\w.-]/g, "_")}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

/** CreateTunnel, ListOpenTunnels, and HAR downloads (one request, or a query's result set). */
export function tunnelRoutes({
  ctx,
  workers,
  tunnels,
  exportSlots,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  tunnels: OpenTunnels;
  exportSlots: ExportSlots;
}) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/CreateTunnel",
      ({ body, principal }) =>
        createTunnel({
          ctx,
          tunnels,
          principal,
          namespaceId: body.namespaceId,
          role: body.role,
        }),
      callSchemas("CreateTunnel"),
    )
    .post(
      "/api/ListOpenTunnels",
      async ({ body, principal }) => {
        if (!principal) throw new AppError("UNAUTHORIZED", "not signed in");
        return {
          tunnels: await listOpenTunnels({
            tunnels,
            principalKey: principalKey(principal),
            createAfterTime: body.create_after_time,
            now: ctx.now(),
          }),
        };
      },
      callSchemas("ListOpenTunnels"),
    )
    .get(
      "/api/DownloadHar",
      async ({ query, principal }) => {
        const { har, filename } = await exportHar({
          ctx,
          workers,
          principal,
          namespaceId: query.namespaceId,
          selection: { eventId: query.eventId },
        });
        return attachment(har, filename);
      },
      { query: DownloadHarQuery },
    )
    .post(
      "/api/DownloadHar",
      async ({ body, principal }) => {
        const { har, filename } = await exportHar({
          ctx,
          workers,
          slots: exportSlots,
          principal,
          namespaceId: body.namespaceId,
          selection: {
            filter: body.filter as QueryFilter,
            filterText: body.filterText,
            limit: body.limit,
          },
        });
        return attachment(har, filename);
      },
      { body: DownloadHarRequest },
    );
}
