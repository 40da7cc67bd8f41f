import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";
import { hasSeenPublisher } from "~/services/live/has-seen-publisher.ts";
import { joinSubscriber } from "~/services/live/join-subscriber.ts";

/** JoinSubscriber, HasSeenPublisher, GetLink. */
export function liveRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/JoinSubscriber",
      ({ body, principal }) => joinSubscriber({ ctx, principal, namespaceId: body.namespaceId }),
      callSchemas("JoinSubscriber"),
    )
    .post(
      "/api/HasSeenPublisher",
      ({ body, principal }) => hasSeenPublisher({ ctx, principal, orgId: body.orgId }),
      callSchemas("HasSeenPublisher"),
    )
    .post(
      "/api/GetLink",
      async ({ body, set }) => {
        const link = await getLink({ ctx, linkId: body.linkId });
        // The answer names a capability: keep it out of shared caches.
        set.headers["cache-control"] = "no-store";
        return { linkUrl: link.linkUrl };
      },
      callSchemas("GetLink"),
    );
}
