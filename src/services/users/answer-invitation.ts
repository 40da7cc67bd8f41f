import { and, eq, isNull } from "drizzle-orm";
import { invitations, memberships, namespaceMembers, namespaces } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { AcceptInvitationResponse } from "~/lib/protocol/api/users.ts";
import { isUuid } from "~/lib/server/ids.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

const invitationNotFound = () => new AppError("NOT_FOUND", "invitation not found");

/** Only the person signed in with the invited address sees an invitation, and only while it waits for an answer. */
function ownPending(principal: UserPrincipal, invitationId: string) {
  return and(eq(invitations.id, invitationId), eq(invitations.email, principal.email), isNull(invitations.acceptedAt));
}

/**
 * The invited person joins: a member of the namespace (with the rights the invitation carries) and of its org. Nobody
 * becomes a member of anything without this step.
 */
export async function acceptInvitation({
  ctx,
  principal,
  invitationId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  invitationId: string;
}): Promise<AcceptInvitationResponse> {
  if (!isUuid(invitationId)) throw invitationNotFound();
  const now = ctx.now();
  return ctx.db.transaction(async (tx) => {
    const [invite] = await tx
      .select({ namespaceId: namespaces.id, name: namespaces.name, orgId: namespaces.orgId, hasWrite: invitations.hasWrite })
      .from(invitations)
      .innerJoin(namespaces, eq(namespaces.id, invitations.namespaceId))
      .where(ownPending(principal, invitationId))
      .for("update", { of: invitations })
      .limit(1);
    if (!invite) throw invitationNotFound();
    await tx.insert(memberships).values({ orgId: invite.orgId, userId: principal.userId, createdAt: now }).onConflictDoNothing();
    await tx
      .insert(namespaceMembers)
      .values({ namespaceId: invite.namespaceId, userId: principal.userId, hasWrite: invite.hasWrite, joinedAt: now })
      .onConflictDoNothing();
    await tx.update(invitations).set({ acceptedAt: now }).where(eq(invitations.id, invitationId));
    return { namespace: { namespaceId: invite.namespaceId, name: invite.name }, org: { orgId: invite.orgId } };
  });
}

/** The invited person says no: the invitation is gone, and they stay out. */
export async function declineInvitation({
  ctx,
  principal,
  invitationId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  invitationId: string;
}): Promise<void> {
  if (!isUuid(invitationId)) throw invitationNotFound();
  const deleted = await ctx.db.delete(invitations).where(ownPending(principal, invitationId)).returning({ id: invitations.id });
  if (deleted.length === 0) throw invitationNotFound();
}
