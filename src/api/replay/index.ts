import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getReplayAvailability } from "~/services/replay/get-replay-availability.ts";
import { REPLAYS_RATE_LIMITED, resendRequest } from "~/services/replay/resend-request.ts";

/** Resend (ADR 0041): GetReplayAvailability and ResendRequest, a namespace's admins only. */
export function replayRoutes(ctx: ServiceContext, deps: { replays: ReplayRuns; workers: WorkerRegistry; limits: ClientLimits }) {
  return new Elysia()
    .use(
      apiCall(ctx, "GetReplayAvailability", ({ body, principal }) =>
        getReplayAvailability({ ctx, principal, namespaceId: body.namespaceId, replays: deps.replays }),
      ),
    )
    .use(
      apiCall(ctx, "ResendRequest", ({ body, principal }) =>
        resendRequest({
          ctx,
          principal,
          input: body,
          workers: deps.workers,
          replays: deps.replays,
          admit: () => deps.limits.admit("replays", principal.userId, REPLAYS_RATE_LIMITED),
        }),
      ),
    );
}
