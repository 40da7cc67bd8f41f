import { routeFolds, routePatterns } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Every namespace's patterns and folded positions, as a server starts (RouteTemplates.load). */
export async function loadRouteSettings({ ctx }: { ctx: ServiceContext }): Promise<{
  patterns: Array<[string, string[]]>;
  folds: Array<[string, string]>;
}> {
  const patterns = await ctx.db.select({ namespaceId: routePatterns.namespaceId, patterns: routePatterns.patterns }).from(routePatterns);
  const folds = await ctx.db.select({ namespaceId: routeFolds.namespaceId, prefix: routeFolds.prefix }).from(routeFolds);
  return {
    patterns: patterns.map((r) => [r.namespaceId, r.patterns]),
    folds: folds.map((r) => [r.namespaceId, r.prefix]),
  };
}
