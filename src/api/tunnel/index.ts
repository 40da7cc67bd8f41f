import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import { routeAccess } from "~/api/routes.ts";
import type { ExportSlots } from "~/engines/limits/export-slots.ts";
import type { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
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
    .use(
      apiCall(ctx, "CreateTunnel", ({ body, principal }) =>
        createTunnel({ ctx, tunnels, principal, namespaceId: body.namespaceId, role: body.role }),
      ),
    )
    .use(
      apiCall(ctx, "ListOpenTunnels", async ({ body, principal }) => ({
        tunnels: await listOpenTunnels({
          tunnels,
          principalKey: principalKey(principal),
          createAfterTime: body.create_after_time,
          now: ctx.now(),
        }),
      })),
    )
    .use(
      new Elysia().use(authPlugin(ctx, routeAccess("GET /api/DownloadHar"))).get(
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
      ),
    )
    .use(
      new Elysia().use(authPlugin(ctx, routeAccess("POST /api/DownloadHar"))).post(
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
      ),
    );
}
