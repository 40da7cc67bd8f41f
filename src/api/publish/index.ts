import { Elysia } from "elysia";
import { authPlugin } from "~/api/plugins/auth.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";
import { joinPublisher } from "~/services/publish/join-publisher.ts";
import { publishModel } from "./model.ts";

/** JoinPublisher: the capture CLI asks where to send its events (Authorization: Bearer <namespace token>, or none). */
export function publishRoutes(ctx: ServiceContext) {
  return new Elysia().use(authPlugin(ctx)).post(
    "/api/JoinPublisher",
    async ({ body, principal, request, set }) => {
      // A token that does not authenticate is an error, never a silent fallback to an anonymous link.
      if (request.headers.has("authorization") && principal === null) {
        throw new AppError("UNAUTHORIZED", "TAPSCOPE_TOKEN is not a valid token (deleted, or from another server?)");
      }
      set.headers["cache-control"] = "no-store";
      return joinPublisher({ ctx, principal: principal?.kind === "user" ? null : principal, linkId: body.linkId });
    },
    { body: publishModel.joinPublisherBody, response: { 200: publishModel.joinPublisherResponse } },
  );
}
