import { and, asc, eq, isNull } from "drizzle-orm";
import { invitations, namespaces, users } from "#db/schema/index.ts";
import type { Invitation } from "~/lib/protocol/api/users.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** The invitations addressed to the caller's address that wait for their answer, oldest first. */
export async function listMyInvitations({ ctx, principal }: { ctx: ServiceContext; principal: UserPrincipal }): Promise<Invitation[]> {
  const rows = await ctx.db
    .select({
      invitationId: invitations.id,
      namespaceId: namespaces.id,
      namespaceName: namespaces.name,
      orgId: namespaces.orgId,
      invitedByEmail: users.email,
      createdAt: invitations.createdAt,
    })
    .from(invitations)
    .innerJoin(namespaces, eq(namespaces.id, invitations.namespaceId))
    .leftJoin(users, eq(users.id, invitations.invitedByUserId))
    .where(and(eq(invitations.email, principal.email), isNull(invitations.acceptedAt)))
    .orderBy(asc(invitations.createdAt), asc(invitations.id));
  return rows.map(({ createdAt, ...r }) => ({ ...r, inviteTime: createdAt.toISOString() }));
}
