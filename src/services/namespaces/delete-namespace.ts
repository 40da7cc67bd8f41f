import { count, eq, sql } from "drizzle-orm";
import { namespaceMembers, namespaces, namespaceTokens, orgs } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import { endEmptyOrgMemberships } from "~/services/access/org-membership.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

export const DELETE_NAMESPACE_FORBIDDEN = "You do not have permissions to delete this namespace.";
export const LAST_NAMESPACE = "An organization keeps at least one namespace: create another one before deleting this one.";

/**
 * A namespace admin deletes a namespace: its members, invitations, tokens and links go with it (the database cascades),
 * every socket they opened closes at once (publishers, live views, tunnels), members left in no namespace of the org
 * leave it, and `dropEvents` removes its stored events. An org's last namespace stays (the dashboard needs one).
 */
export async function deleteNamespace({
  ctx,
  principal,
  namespaceId,
  dropEvents,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  /** Drops the namespace's events from the store (in-process; a self-hosted worker keeps what it holds). */
  dropEvents?: (namespaceId: string) => Promise<void>;
}): Promise<void> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: DELETE_NAMESPACE_FORBIDDEN });
  const { members, tokenIds } = await ctx.db.transaction(async (tx) => {
    // Two of the org's namespaces deleted at once: one waits and then sees how many are left.
    await tx.execute(sql`select 1 from ${orgs} where ${orgs.id} = ${access.orgId} for update`);
    const [left] = await tx.select({ n: count() }).from(namespaces).where(eq(namespaces.orgId, access.orgId));
    if ((left?.n ?? 0) <= 1) throw new AppError("CONFLICT", LAST_NAMESPACE);
    const members = await tx
      .select({ userId: namespaceMembers.userId })
      .from(namespaceMembers)
      .where(eq(namespaceMembers.namespaceId, namespaceId));
    const tokens = await tx.select({ id: namespaceTokens.id }).from(namespaceTokens).where(eq(namespaceTokens.namespaceId, namespaceId));
    await tx.delete(namespaces).where(eq(namespaces.id, namespaceId));
    await endEmptyOrgMemberships(
      tx,
      access.orgId,
      members.map((m) => m.userId),
    );
    return { members: members.map((m) => m.userId), tokenIds: tokens.map((t) => t.id) };
  });

  for (const userId of members) {
    for (const write of [false, true]) ctx.sockets?.revoke({ kind: "member", userId, namespaceId, write });
  }
  for (const tokenId of tokenIds) ctx.sockets?.revoke({ kind: "namespaceToken", tokenId });
  ctx.sockets?.revoke({ kind: "namespace", namespaceId });
  // The namespace is gone either way; a table left behind keeps the strictest retention (engines/store/retention.ts).
  await dropEvents?.(namespaceId).catch((err) => log.error("could not drop a deleted namespace's events", { namespaceId, err }));
}
