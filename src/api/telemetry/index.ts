import { Elysia, t } from "elysia";
import { authPlugin, isAllowedOrigin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { recordEvent } from "~/services/telemetry/record-event.ts";
import { parseTagsHeader, TAGS_HEADER } from "./tags.ts";

/** /api/Event and /api/LogEvent: an empty body, the kind and details in the x-tags header (see tags.ts). */
export function eventRoutes(ctx: ServiceContext) {
  const handler =
    (source: "Event" | "LogEvent") =>
    async ({ request, principal }: { request: Request; principal: { kind: string; userId?: string } | null }) => {
      const tags = parseTagsHeader(request.headers.get(TAGS_HEADER));
      // Anonymous pages report too (e.g. the login form); the user is attached only when the session is real.
      const userId = principal?.kind === "user" && isAllowedOrigin(request, ctx.config) ? principal.userId : undefined;
      await recordEvent({ ctx, source, tags, userId });
      return {};
    };
  const options = { parse: "none" as const, response: { 200: t.Object({}) } };
  return new Elysia()
    .use(authPlugin(ctx))
    .post("/api/Event", handler("Event"), options)
    .post("/api/LogEvent", handler("LogEvent"), options);
}
