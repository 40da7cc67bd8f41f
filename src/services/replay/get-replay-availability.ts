import type { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import { AppError } from "~/lib/errors.ts";
import type { GetReplayAvailabilityResponse } from "~/lib/protocol/api/replay.ts";
import { noReplayRunText, replayForbiddenText } from "~/lib/protocol/replay.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Whether the Resend button can send now: the caller is an admin of the namespace and a replay-allowing run is connected. */
export async function getReplayAvailability({
  ctx,
  principal,
  namespaceId,
  replays,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  replays: Pick<ReplayRuns, "has">;
}): Promise<GetReplayAvailabilityResponse> {
  try {
    await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: replayForbiddenText });
  } catch (err) {
    if (err instanceof AppError && err.code === "FORBIDDEN") return { canResend: false, reason: replayForbiddenText };
    throw err;
  }
  return replays.has(namespaceId) ? { canResend: true, reason: null } : { canResend: false, reason: noReplayRunText };
}
