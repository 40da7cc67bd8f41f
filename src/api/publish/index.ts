import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";
import { joinPublisher } from "~/services/publish/join-publisher.ts";

/** JoinPublisher: the capture CLI asks where to send its events (Authorization: Bearer <namespace token>, or none). */
export function publishRoutes(ctx: ServiceContext, limits: ClientLimits, orgPublishers: OrgPublishers) {
  return new Elysia().use(authPlugin(ctx)).post(
    "/api/JoinPublisher",
    async ({ body, principal, request, set, server }) => {
      // A token that does not authenticate is an error, never a silent fallback to an anonymous link.
      if (request.headers.has("authorization") && principal === null) {
        throw new AppError("UNAUTHORIZED", "TAPSCOPE_TOKEN is not a valid token (deleted, or from another server?)");
      }
      const publisher = principal?.kind === "user" ? null : principal;
      // Only a new anonymous link counts: rejoining a live link (a publisher reconnecting) does not.
      const admitNewLink = () =>
        limits.admit(
          "anonymousLinks",
          limits.addressOf(request, server),
          "too many new shared links from this address; set TAPSCOPE_TOKEN to publish into a namespace (or raise ANONYMOUS_LINKS_PER_HOUR on the server)",
        );
      set.headers["cache-control"] = "no-store";
      return joinPublisher({
        ctx,
        principal: publisher,
        linkId: body.linkId,
        admitNewLink,
        runningPublishers: (orgId) => orgPublishers.count(orgId),
      });
    },
    callSchemas("JoinPublisher"),
  );
}
