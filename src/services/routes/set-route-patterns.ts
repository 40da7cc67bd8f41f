import { routePatterns } from "#db/schema/index.ts";
import type { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { AppError } from "~/lib/errors.ts";
import { compileRoutePatterns } from "~/lib/routes/patterns.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * Replaces a namespace's explicit route patterns (an admin's): checked whole first, so a refused list changes nothing;
 * ingest applies them to the events it takes from then on, on every node (RouteTemplates tells the others).
 */
export async function setRoutePatterns({
  ctx,
  routes,
  principal,
  namespaceId,
  patterns,
}: {
  ctx: ServiceContext;
  routes: RouteTemplates;
  principal: UserPrincipal;
  namespaceId: string;
  patterns: string[];
}): Promise<string[]> {
  await requireNamespaceAccess({
    ctx,
    principal,
    namespaceId,
    write: true,
    forbiddenMessage: "You do not have permissions to change this namespace's route patterns.",
  });
  const compiled = compileRoutePatterns(patterns);
  if (!compiled.ok) throw new AppError("BAD_REQUEST", compiled.error);
  const list = [...compiled.compiled.patterns];
  await ctx.db
    .insert(routePatterns)
    .values({ namespaceId, patterns: list, updatedByUserId: principal.userId, updatedAt: ctx.now() })
    .onConflictDoUpdate({
      target: routePatterns.namespaceId,
      set: { patterns: list, updatedByUserId: principal.userId, updatedAt: ctx.now() },
    });
  routes.setPatterns(namespaceId, list, true);
  return list;
}
