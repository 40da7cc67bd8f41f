import { eq } from "drizzle-orm";
import { routePatterns } from "#db/schema/index.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** A namespace's explicit route patterns, in the order they were written: any member may read them. */
export async function getRoutePatterns({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
}): Promise<string[]> {
  await requireNamespaceAccess({ ctx, principal, namespaceId });
  const [row] = await ctx.db
    .select({ patterns: routePatterns.patterns })
    .from(routePatterns)
    .where(eq(routePatterns.namespaceId, namespaceId))
    .limit(1);
  return row?.patterns ?? [];
}
