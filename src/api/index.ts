import { Elysia } from "elysia";
import type { Runtime } from "~/runtime.ts";
import { authRoutes } from "./auth/index.ts";
import { billingRoutes } from "./billing/index.ts";
import { endpointRoutes } from "./endpoints/index.ts";
import { installRoutes } from "./install/index.ts";
import { liveRoutes } from "./live/index.ts";
import { orgRoutes } from "./orgs/index.ts";
import { bodyLimitPlugin } from "./plugins/body-limit.ts";
import { clientLimitsPlugin } from "./plugins/client-limits.ts";
import { publishRoutes } from "./publish/index.ts";
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
  routes,
}: Runtime) {
  const dropEvents = store ? (namespaceId: string) => store.dropNamespace(namespaceId) : undefined;
  return (
    new Elysia({ name: "api" })
      .use(clientLimitsPlugin(limits))
      .use(bodyLimitPlugin)
      // A cluster node also says whether its broker is reachable (live view across nodes); a load balancer may check it.
      .get("/api/health", () => (cluster ? { ok: true, broker: cluster.brokerConnected ? "connected" : "unreachable" } : { ok: true }))
      .use(authRoutes(ctx))
      .use(billingRoutes(ctx))
      .use(endpointRoutes(ctx, routes))
      .use(eventRoutes(ctx, limits, eventLog))
      .use(installRoutes(config))
      .use(liveRoutes(ctx))
      .use(orgRoutes(ctx, dropEvents))
      .use(publishRoutes(ctx, limits, orgPublishers))
      .use(tokenRoutes(ctx))
      .use(tunnelRoutes({ ctx, workers, tunnels, exportSlots }))
      .use(userRoutes(ctx, limits))
  );
}
