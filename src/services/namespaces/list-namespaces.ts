import { and, asc, eq } from "drizzle-orm";
import { namespaceMembers, namespaces } from "#db/schema/index.ts";
import type { Namespace } from "~/lib/protocol/api/orgs.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Users see the org's namespaces they belong to; org tokens see all of the org's; namespace tokens their own. */
export async function listNamespaces({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: Principal;
  orgId: string;
}): Promise<Namespace[]> {
  await requireOrgAccess({ ctx, principal, orgId });
  const columns = { namespaceId: namespaces.id, name: namespaces.name };
  if (principal.kind === "user") {
    return ctx.db
      .select(columns)
      .from(namespaces)
      .innerJoin(namespaceMembers, and(eq(namespaceMembers.namespaceId, namespaces.id), eq(namespaceMembers.userId, principal.userId)))
      .where(eq(namespaces.orgId, orgId))
      .orderBy(asc(namespaces.createdAt), asc(namespaces.name));
  }
  const rows = await ctx.db
    .select(columns)
    .from(namespaces)
    .where(eq(namespaces.orgId, orgId))
    .orderBy(asc(namespaces.createdAt), asc(namespaces.name));
  return principal.kind === "namespaceToken" ? rows.filter((r) => r.namespaceId === principal.namespaceId) : rows;
}
