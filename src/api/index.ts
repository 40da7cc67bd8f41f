import { Elysia } from "elysia";
import { createMailer } from "~/lib/mailer.ts";
import type { AppDeps } from "~/server.ts";
import { createServiceContext } from "~/services/context.ts";
import { authRoutes } from "./auth/index.ts";
import { clientLimitsFor, clientLimitsPlugin } from "./plugins/client-limits.ts";
import { eventRoutes } from "./events/index.ts";
import { installRoutes } from "./install/index.ts";
import { liveRoutes } from "./live/index.ts";
import { orgRoutes } from "./orgs/index.ts";
import { publishRoutes } from "./publish/index.ts";
import { tokenRoutes } from "./tokens/index.ts";
import { tunnelRoutes } from "./tunnel/index.ts";
import { workerRegistryFor } from "~/services/tunnel/worker-registry.ts";
import { userRoutes } from "./users/index.ts";
import { bodyLimitPlugin } from "./plugins/body-limit.ts";

/** Every /api/* endpoint. Each area is a thin controller under src/api/<area>/. */
export function apiRoutes(deps: AppDeps) {
  const ctx = createServiceContext({ ...deps, mailer: deps.mailer ?? createMailer(deps.config) });
  const limits = clientLimitsFor(deps);
  return new Elysia({ name: "api" })
    .use(clientLimitsPlugin(limits))
    .use(bodyLimitPlugin)
    .get("/api/health", () => ({ ok: true }))
    .use(authRoutes(ctx))
    .use(eventRoutes(ctx))
    .use(installRoutes(deps))
    .use(liveRoutes(ctx))
    .use(orgRoutes(ctx))
    .use(publishRoutes(ctx, limits))
    .use(tokenRoutes(ctx))
    .use(tunnelRoutes({ ctx, workers: workerRegistryFor(deps) }))
    .use(userRoutes(ctx));
}
