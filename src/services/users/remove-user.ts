import { and, eq, sql } from "drizzle-orm";
import { namespaceMembers, namespaces, namespaceTokens } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { RemoveUserResponse } from "~/lib/protocol/api/users.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { endEmptyOrgMemberships } from "~/services/access/org-membership.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

export const REMOVE_USER_FORBIDDEN = "You do not have permissions to remove users from this namespace.";
export const LAST_ADMIN =
  "A namespace needs at least one admin: this is its last one. Delete the namespace instead, or ask another admin to remove you.";

/**
 * Takes a member out of a namespace: an admin removes anyone, a member removes only themselves (leaving). The last
 * admin stays. Their live views and tunnels on it close at once (on the other nodes of a cluster within the grants'
 * sweep), and so does their org membership when no namespace of the org is left to them. With `deleteTokens` the
 * namespace tokens they created are deleted too, closing what those opened.
 */
export async function removeUser({
  ctx,
  principal,
  namespaceId,
  userId,
  deleteTokens = false,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  userId: string;
  deleteTokens?: boolean;
}): Promise<RemoveUserResponse> {
  const isSelf = userId === principal.userId;
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId, write: !isSelf, forbiddenMessage: REMOVE_USER_FORBIDDEN });
  const notMember = new AppError("NOT_FOUND", "that user is not a member of this namespace");
  if (!isUuid(userId)) throw notMember;

  const tokenIds = await ctx.db.transaction(async (tx) => {
    // Two admins removing each other at once: one waits for the other and then sees who is left.
    await tx.execute(sql`select 1 from ${namespaces} where ${namespaces.id} = ${namespaceId} for update`);
    const members = await tx
      .select({ userId: namespaceMembers.userId, hasWrite: namespaceMembers.hasWrite })
      .from(namespaceMembers)
      .where(eq(namespaceMembers.namespaceId, namespaceId));
    const target = members.find((m) => m.userId === userId);
    if (!target) throw notMember;
    if (!isSelf && !members.some((m) => m.userId === principal.userId && m.hasWrite))
      throw new AppError("FORBIDDEN", REMOVE_USER_FORBIDDEN);
    if (target.hasWrite && members.filter((m) => m.hasWrite).length === 1) throw new AppError("CONFLICT", LAST_ADMIN);

    await tx.delete(namespaceMembers).where(and(eq(namespaceMembers.namespaceId, namespaceId), eq(namespaceMembers.userId, userId)));
    const deleted = deleteTokens
      ? await tx
          .delete(namespaceTokens)
          .where(and(eq(namespaceTokens.namespaceId, namespaceId), eq(namespaceTokens.creatorUserId, userId)))
          .returning({ id: namespaceTokens.id })
      : [];
    await endEmptyOrgMemberships(tx, access.orgId, [userId]);
    return deleted.map((t) => t.id);
  });

  for (const write of [false, true]) ctx.sockets?.revoke({ kind: "member", userId, namespaceId, write });
  for (const tokenId of tokenIds) ctx.sockets?.revoke({ kind: "namespaceToken", tokenId });
  return { deletedTokens: tokenIds.length };
}
