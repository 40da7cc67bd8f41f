import { and, asc, eq, isNull } from "drizzle-orm";
import { invitations, namespaceMembers, users } from "#db/schema/index.ts";
import type { NamespaceUser } from "~/lib/protocol/api/users.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Members, then invited addresses that have not accepted yet (lib/protocol/api/users.ts). */
export async function listUsers({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
}): Promise<NamespaceUser[]> {
  await requireNamespaceAccess({ ctx, principal, namespaceId });
  const members = await ctx.db
    .select({ userId: users.id, email: users.email, joinedAt: namespaceMembers.joinedAt, hasWrite: namespaceMembers.hasWrite })
    .from(namespaceMembers)
    .innerJoin(users, eq(users.id, namespaceMembers.userId))
    .where(eq(namespaceMembers.namespaceId, namespaceId))
    .orderBy(asc(namespaceMembers.joinedAt), asc(users.email));
  const pending = await ctx.db
    .select({ id: invitations.id, email: invitations.email, createdAt: invitations.createdAt, hasWrite: invitations.hasWrite })
    .from(invitations)
    .where(and(eq(invitations.namespaceId, namespaceId), isNull(invitations.acceptedAt)))
    .orderBy(asc(invitations.createdAt), asc(invitations.email));
  return [
    ...members.map((m) => ({
      userId: m.userId,
      email: m.email,
      joinTime: m.joinedAt.toISOString(),
      hasWrite: m.hasWrite,
      isPending: false,
      invitationId: null,
    })),
    ...pending.map((p) => ({
      userId: null,
      email: p.email,
      joinTime: p.createdAt.toISOString(),
      hasWrite: p.hasWrite,
      isPending: true,
      invitationId: p.id,
    })),
  ];
}
