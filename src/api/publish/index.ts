import { Elysia } from "elysia";
import { authPlugin } from "~/api/plugins/auth.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";
import { RateLimiter } from "~/lib/rate-limit.ts";
import { joinPublisher } from "~/services/publish/join-publisher.ts";
import { publishModel } from "./model.ts";

/** New anonymous links per client address: a burst of 100, then 100 an hour. Loopback (a local server) is exempt. */
const ANONYMOUS_LINKS_PER_HOUR = 100;

function isLoopback(address: string): boolean {
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** JoinPublisher: the capture CLI asks where to send its events (Authorization: Bearer <namespace token>, or none). */
export function publishRoutes(ctx: ServiceContext) {
  const anonymousLinks = new RateLimiter({ ratePerSecond: ANONYMOUS_LINKS_PER_HOUR / 3600, burst: ANONYMOUS_LINKS_PER_HOUR });
  return new Elysia().use(authPlugin(ctx)).post(
    "/api/JoinPublisher",
    async ({ body, principal, request, set, server }) => {
      // A token that does not authenticate is an error, never a silent fallback to an anonymous link.
      if (request.headers.has("authorization") && principal === null) {
        throw new AppError("UNAUTHORIZED", "TAPSCOPE_TOKEN is not a valid token (deleted, or from another server?)");
      }
      const publisher = principal?.kind === "user" ? null : principal;
      if (!publisher && body.linkId === undefined) {
        const address = server?.requestIP(request)?.address ?? "";
        if (!isLoopback(address) && anonymousLinks.take(address, 1, Date.now()) === 0) {
          throw new AppError("RATE_LIMITED", "too many new shared links from this address; set TAPSCOPE_TOKEN to publish into a namespace");
        }
      }
      set.headers["cache-control"] = "no-store";
      return joinPublisher({ ctx, principal: publisher, linkId: body.linkId });
    },
    { body: publishModel.joinPublisherBody, response: { 200: publishModel.joinPublisherResponse } },
  );
}
