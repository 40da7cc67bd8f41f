import { and, eq } from "drizzle-orm";
import { namespaceMembers, namespaces } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { isUuid } from "~/lib/server/ids.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

export type NamespaceAccess = { namespaceId: string; orgId: string; name: string };

/**
 * The one namespace check. Users need a namespace membership, and `write` needs hasWrite (namespace admin).
 * A namespace token reaches its namespace, an org token every namespace of its org (tokens carry data
 * rights; the management calls are user-only anyway).
 * Unknown namespaces and namespaces the caller cannot see both answer NOT_FOUND, so nothing leaks.
 */
export async function requireNamespaceAccess({
  ctx,
  principal,
  namespaceId,
  write = false,
  forbiddenMessage = "forbidden: you do not have write access to this namespace",
}: {
  ctx: ServiceContext;
  principal: Principal;
  namespaceId: string;
  write?: boolean;
  /** The FORBIDDEN text when the caller can see the namespace but lacks write. */
  forbiddenMessage?: string;
}): Promise<NamespaceAccess> {
  const notFound = new AppError("NOT_FOUND", "namespace not found");
  if (!isUuid(namespaceId)) throw notFound;

  if (principal.kind === "user") {
    const [row] = await ctx.db
      .select({
        namespaceId: namespaces.id,
        orgId: namespaces.orgId,
        name: namespaces.name,
        hasWrite: namespaceMembers.hasWrite,
      })
      .from(namespaces)
      .innerJoin(namespaceMembers, and(eq(namespaceMembers.namespaceId, namespaces.id), eq(namespaceMembers.userId, principal.userId)))
      .where(eq(namespaces.id, namespaceId))
      .limit(1);
    if (!row) throw notFound;
    if (write && !row.hasWrite) throw new AppError("FORBIDDEN", forbiddenMessage);
    return { namespaceId: row.namespaceId, orgId: row.orgId, name: row.name };
  }

  const [row] = await ctx.db
    .select({ namespaceId: namespaces.id, orgId: namespaces.orgId, name: namespaces.name })
    .from(namespaces)
    .where(eq(namespaces.id, namespaceId))
    .limit(1);
  if (!row) throw notFound;
  const inScope = principal.kind === "namespaceToken" ? principal.namespaceId === row.namespaceId : principal.orgId === row.orgId;
  if (!inScope) throw notFound;
  return row;
}
