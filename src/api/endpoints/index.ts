import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { deleteAlertRule } from "~/services/alerts/delete-alert-rule.ts";
import { listAlerts } from "~/services/alerts/list-alerts.ts";
import { saveAlertRule } from "~/services/alerts/save-alert-rule.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getRoutePatterns } from "~/services/routes/get-route-patterns.ts";
import { setRoutePatterns } from "~/services/routes/set-route-patterns.ts";

/** The Endpoints screen's settings: a namespace's route patterns (GetRoutePatterns, SetRoutePatterns) and alert rules. */
export function endpointRoutes(ctx: ServiceContext, routes: RouteTemplates) {
  return new Elysia()
    .use(
      apiCall(ctx, "GetRoutePatterns", async ({ body, principal }) => ({
        patterns: await getRoutePatterns({ ctx, principal, namespaceId: body.namespaceId }),
      })),
    )
    .use(
      apiCall(ctx, "SetRoutePatterns", async ({ body, principal }) => ({
        patterns: await setRoutePatterns({ ctx, routes, principal, namespaceId: body.namespaceId, patterns: body.patterns }),
      })),
    )
    .use(apiCall(ctx, "ListAlerts", ({ body, principal }) => listAlerts({ ctx, principal, namespaceId: body.namespaceId })))
    .use(
      apiCall(ctx, "SaveAlertRule", ({ body, principal }) =>
        saveAlertRule({
          ctx,
          principal,
          namespaceId: body.namespaceId,
          ruleId: body.ruleId,
          rule: body.rule,
          rotateSecret: body.rotateSecret,
        }),
      ),
    )
    .use(
      apiCall(ctx, "DeleteAlertRule", ({ body, principal }) =>
        deleteAlertRule({ ctx, principal, namespaceId: body.namespaceId, ruleId: body.ruleId }),
      ),
    );
}
