import { Elysia, t } from "elysia";
import { authPlugin, isAllowedOrigin } from "~/api/plugins/auth.ts";
import { routeAccess } from "~/api/routes.ts";
import type { ClientLimits, PeerServer } from "~/engines/limits/client-limits.ts";
import type { EventLogBudget } from "~/engines/limits/event-log-budget.ts";
import type { ServiceContext } from "~/services/context.ts";
import { recordEvent } from "~/services/telemetry/record-event.ts";
import { parseTagsHeader, TAGS_HEADER } from "./tags.ts";

/**
 * /api/Event and /api/LogEvent: an empty body, the kind and details in the x-tags header (see tags.ts). Each client
 * address may store a day's share of the reports' size budget; the table is held within it (EventLogBudget).
 */
export function eventRoutes(ctx: ServiceContext, limits: ClientLimits, budget: EventLogBudget) {
  const handler =
    (source: "Event" | "LogEvent") =>
    async ({
      request,
      principal,
      server,
    }: {
      request: Request;
      principal: { kind: string; userId?: string } | null;
      server: PeerServer;
    }) => {
      const tags = parseTagsHeader(request.headers.get(TAGS_HEADER));
      // Anonymous pages report too (e.g. the login form); the user is attached only when the session is real.
      const userId = principal?.kind === "user" && isAllowedOrigin(request, ctx.config) ? principal.userId : undefined;
      const address = limits.addressOf(request, server);
      const admitBytes = (bytes: number) =>
        limits.admit("telemetryBytes", address, "too many reports stored from this address today; try again later", bytes);
      const { bytes } = await recordEvent({ ctx, source, tags, userId, admitBytes });
      budget.stored(bytes);
      return {};
    };
  const options = { parse: "none" as const, response: { 200: t.Object({}) } };
  return new Elysia()
    .use(new Elysia().use(authPlugin(ctx, routeAccess("POST /api/Event"))).post("/api/Event", handler("Event"), options))
    .use(new Elysia().use(authPlugin(ctx, routeAccess("POST /api/LogEvent"))).post("/api/LogEvent", handler("LogEvent"), options));
}
