import { Elysia } from "elysia";
import type { OtlpStats } from "~/lib/protocol/api/otlp.ts";
import type { Runtime } from "~/runtime.ts";
import { authRoutes } from "./auth/index.ts";
import { billingRoutes } from "./billing/index.ts";
import { endpointRoutes } from "./endpoints/index.ts";
import { installRoutes } from "./install/index.ts";
import { liveRoutes } from "./live/index.ts";
import { mcpRoutes } from "./mcp/index.ts";
import { orgRoutes } from "./orgs/index.ts";
import { otlpRoutes } from "./otlp/index.ts";
import { bodyLimitPlugin } from "./plugins/body-limit.ts";
import { clientLimitsPlugin } from "./plugins/client-limits.ts";
import { publishRoutes } from "./publish/index.ts";
import { replayRoutes } from "./replay/index.ts";
import { eventRoutes } from "./telemetry/index.ts";
import { tokenRoutes } from "./tokens/index.ts";
import { tunnelRoutes } from "./tunnel/index.ts";
import { userRoutes } from "./users/index.ts";

/** Every /api/* endpoint. Each area is a thin controller under src/api/<area>/. */
export function apiRoutes({
  ctx,
  config,
  clientLimits: limits,
  orgPublishers,
  workers,
  tunnels,
  cluster,
  store,
  eventLog,
  exportSlots,
  otlp,
  routes,
  replays,
}: Runtime) {
  const dropEvents = store ? (namespaceId: string) => store.dropNamespace(namespaceId) : undefined;
  return (
    new Elysia({ name: "api" })
      .use(clientLimitsPlugin(limits))
      .use(bodyLimitPlugin)
      // A cluster node also says whether its broker is reachable (live view across nodes); a load balancer may check it.
      // With OTLP export on: this node's spans sent, queued and lost, all namespaces together.
      .get("/api/health", () => ({
        ok: true,
        ...(cluster ? { broker: cluster.brokerConnected ? "connected" : "unreachable" } : {}),
        ...(otlp.isActive ? { otlp: otlpHealth(otlp.totals()) } : {}),
      }))
      .use(authRoutes(ctx))
      .use(billingRoutes(ctx))
      .use(endpointRoutes(ctx, routes))
      .use(eventRoutes(ctx, limits, eventLog))
      .use(installRoutes(config))
      .use(liveRoutes(ctx))
      .use(mcpRoutes({ ctx, workers, limits }))
      .use(orgRoutes(ctx, dropEvents))
      .use(otlpRoutes(ctx, otlp, limits))
      .use(publishRoutes(ctx, limits, orgPublishers))
      .use(replayRoutes(ctx, { replays, workers, limits }))
      .use(tokenRoutes(ctx))
      .use(tunnelRoutes({ ctx, workers, tunnels, exportSlots }))
      .use(userRoutes(ctx, limits))
  );
}

function otlpHealth(t: OtlpStats) {
  return {
    exported: t.exported,
    queued: t.queued,
    dropped: t.dropped,
    failed: t.failed,
    rejected: t.rejected,
    lastExportTime: t.lastExportTime,
  };
}
