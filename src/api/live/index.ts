import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";
import { hasSeenPublisher } from "~/services/live/has-seen-publisher.ts";
import { joinSubscriber } from "~/services/live/join-subscriber.ts";

/** JoinSubscriber, HasSeenPublisher, GetLink. */
export function liveRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(apiCall(ctx, "JoinSubscriber", ({ body, principal }) => joinSubscriber({ ctx, principal, namespaceId: body.namespaceId })))
    .use(apiCall(ctx, "HasSeenPublisher", ({ body, principal }) => hasSeenPublisher({ ctx, principal, orgId: body.orgId })))
    .use(
      // Anyone holding a link's id may look it up: the id is the capability.
      apiCall(ctx, "GetLink", async ({ body }) => ({ linkUrl: (await getLink({ ctx, linkId: body.linkId })).linkUrl })),
    );
}
