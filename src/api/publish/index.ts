import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import type { ServiceContext } from "~/services/context.ts";
import { joinPublisher } from "~/services/publish/join-publisher.ts";

/**
 * JoinPublisher: the capture CLI asks where to send its events (Authorization: Bearer <namespace token>, or none; a
 * token that does not authenticate is refused by the call's declaration, never taken for anonymous).
 */
export function publishRoutes(ctx: ServiceContext, limits: ClientLimits, orgPublishers: OrgPublishers) {
  return new Elysia().use(
    apiCall(ctx, "JoinPublisher", ({ body, principal, request, server }) => {
      // Only a new anonymous link counts: rejoining a live link (a publisher reconnecting) does not.
      const admitNewLink = () =>
        limits.admit(
          "anonymousLinks",
          limits.addressOf(request, server),
          "too many new shared links from this address; set TAPSCOPE_TOKEN to publish into a namespace (or raise ANONYMOUS_LINKS_PER_HOUR on the server)",
        );
      return joinPublisher({
        ctx,
        principal,
        linkId: body.linkId,
        admitNewLink,
        runningPublishers: (orgId) => orgPublishers.count(orgId),
      });
    }),
  );
}
