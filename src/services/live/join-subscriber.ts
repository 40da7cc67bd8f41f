import type { JoinSubscriberResponse } from "~/lib/protocol/api/live.ts";
import { liveSubscribePath } from "~/lib/protocol/live.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";
import { grantsOf } from "~/services/access/grants.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { issueSubscriberTicket } from "./subscriber-ticket.ts";

/** A signed-in member of the namespace gets a live socket URL carrying a one-minute, single-use ticket. */
export async function joinSubscriber({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
}): Promise<JoinSubscriberResponse> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId });
  const ticket = issueSubscriberTicket(
    ctx.config.sessionSecret,
    { userId: principal.userId, namespaceId: access.namespaceId, grants: grantsOf(principal, { namespaceId: access.namespaceId }) },
    ctx.now(),
  );
  return { websocketUrl: websocketUrl(ctx.config.publicUrl, `${liveSubscribePath}?ticket=${encodeURIComponent(ticket)}`) };
}
