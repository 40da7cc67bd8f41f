import { and, eq } from "drizzle-orm";
import { memberships, namespaceMembers, namespaces } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { isUuid } from "~/lib/server/ids.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * Org check. Users need an org membership; `write` (create namespaces, org tokens) needs admin rights
 * (hasWrite) in at least one namespace of the org. An org token reaches its org; a namespace token may
 * read its own org but never write. Unknown and foreign orgs both answer NOT_FOUND.
 */
export async function requireOrgAccess({
  ctx,
  principal,
  orgId,
  write = false,
  forbiddenMessage = "forbidden: you do not have write access to this org",
}: {
  ctx: ServiceContext;
  principal: Principal;
  orgId: string;
  write?: boolean;
  forbiddenMessage?: string;
}): Promise<{ orgId: string }> {
  const notFound = new AppError("NOT_FOUND", "org not found");
  if (!isUuid(orgId)) throw notFound;

  if (principal.kind === "orgToken") {
    if (principal.orgId !== orgId) throw notFound;
    return { orgId };
  }
  if (principal.kind === "namespaceToken") {
    if (principal.orgId !== orgId) throw notFound;
    if (write) throw new AppError("FORBIDDEN", forbiddenMessage);
    return { orgId };
  }

  const [member] = await ctx.db
    .select({ orgId: memberships.orgId })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, principal.userId)))
    .limit(1);
  if (!member) throw notFound;
  if (write && !(await isOrgAdmin(ctx, principal.userId, orgId))) throw new AppError("FORBIDDEN", forbiddenMessage);
  return { orgId };
}

export async function isOrgAdmin(ctx: ServiceContext, userId: string, orgId: string): Promise<boolean> {
  const [row] = await ctx.db
    .select({ namespaceId: namespaces.id })
    .from(namespaceMembers)
    .innerJoin(namespaces, eq(namespaces.id, namespaceMembers.namespaceId))
    .where(and(eq(namespaceMembers.userId, userId), eq(namespaces.orgId, orgId), eq(namespaceMembers.hasWrite, true)))
    .limit(1);
  return Boolean(row);
}
