import { AppError } from "~/lib/errors.ts";
import type { JoinSubscriberResponse } from "~/lib/protocol/api/live.ts";
import { liveSubscribePath } from "~/lib/protocol/live.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";
import { grantsOf } from "~/services/access/grants.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { NamespaceTokenPrincipal, UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { issueSubscriberTicket } from "./subscriber-ticket.ts";

/**
 * A signed-in member of the namespace, or a token of that namespace (`tapscope tail`; its own namespace when none is
 * named), gets a live socket URL carrying a one-minute, single-use ticket. The socket stands on the same grants, so it
 * closes when the session, membership or token ends. Org tokens belong to self-hosted workers: the call's declared
 * callers refuse them.
 */
export async function joinSubscriber({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal | NamespaceTokenPrincipal;
  namespaceId: string | undefined;
}): Promise<JoinSubscriberResponse> {
  const target = namespaceId ?? (principal.kind === "namespaceToken" ? principal.namespaceId : undefined);
  if (!target) throw new AppError("BAD_REQUEST", "namespaceId is required");
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId: target });
  const viewer = principal.kind === "user" ? principal.userId : principal.tokenId;
  const ticket = issueSubscriberTicket(
    ctx.config.sessionSecret,
    { userId: viewer, namespaceId: access.namespaceId, grants: grantsOf(principal, { namespaceId: access.namespaceId }) },
    ctx.now(),
  );
  return { websocketUrl: websocketUrl(ctx.config.publicUrl, `${liveSubscribePath}?ticket=${encodeURIComponent(ticket)}`) };
}
