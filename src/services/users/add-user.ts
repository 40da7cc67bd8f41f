import { and, eq, isNotNull, isNull } from "drizzle-orm";
import { invitations, namespaceMembers, users } from "#db/schema/index.ts";
import type { AddUserResponse } from "~/lib/protocol/api/users.ts";
import { log } from "~/lib/server/logger.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import { normalizeEmail } from "~/services/auth/sign-in.ts";
import { assertUserLimit } from "~/services/billing/limits.ts";
import type { ServiceContext } from "~/services/context.ts";

export const ADD_USER_FORBIDDEN = "You do not have permissions to invite users to this namespace.";
export const INVITATIONS_RATE_LIMITED = "too many invitations sent; wait a while before inviting more people";

/**
 * Namespace admins invite by address, with or without an account: the invitation waits until the person signed in
 * with that address accepts it (nobody is added to anything unasked). One mail per new invitation; `admitInvitation`
 * is asked before each (it throws when the inviter or the org has sent too many lately). Without SMTP the invitation
 * goes to the server log instead, and the answer says so. Inviting a member or an address already invited changes
 * nothing and sends nothing.
 */
export async function addUser({
  ctx,
  principal,
  namespaceId,
  email,
  admitInvitation,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  email: string;
  admitInvitation?: (from: { userId: string; orgId: string }) => void;
}): Promise<AddUserResponse> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: ADD_USER_FORBIDDEN });
  const address = normalizeEmail(email);
  const [member] = await ctx.db
    .select({ userId: users.id })
    .from(namespaceMembers)
    .innerJoin(users, eq(users.id, namespaceMembers.userId))
    .where(and(eq(namespaceMembers.namespaceId, namespaceId), eq(users.email, address)))
    .limit(1);
  if (member) return { isPending: false };
  const [pending] = await ctx.db
    .select({ id: invitations.id })
    .from(invitations)
    .where(and(eq(invitations.namespaceId, namespaceId), eq(invitations.email, address), isNull(invitations.acceptedAt)))
    .limit(1);
  if (pending) return { isPending: true };
  await assertUserLimit(ctx, access.orgId, address);
  admitInvitation?.({ userId: principal.userId, orgId: access.orgId });

  const now = ctx.now();
  const fresh = { hasWrite: false, invitedByUserId: principal.userId, createdAt: now, acceptedAt: null };
  // An accepted invitation of someone since removed is the row to invite them again with.
  const created = await ctx.db
    .insert(invitations)
    .values({ namespaceId, email: address, ...fresh })
    .onConflictDoUpdate({ target: [invitations.namespaceId, invitations.email], set: fresh, where: isNotNull(invitations.acceptedAt) })
    .returning({ id: invitations.id });
  if (created.length === 0) return { isPending: true };
  const signIn = `${ctx.config.publicUrl}/dashboard`;
  if (!ctx.mailer) {
    // No e-mail here: the log says whom to tell, as it does for sign-in links.
    log.info(`invitation for ${address} to namespace "${access.name}" from ${principal.email}: sign in with that address at ${signIn}`);
    return { isPending: true, delivery: "log" };
  }
  const text =
    `${principal.email} invited you to the Tapscope namespace "${access.name}".\n\n` +
    `Sign in with this address to accept or decline: ${signIn}\n\n` +
    "Nothing changes until you accept. If you do not know the sender, decline or ignore this e-mail.\n";
  // The invitation is saved; a failed notice must not fail the call (the person sees it when they sign in).
  ctx.mailer.send({ to: address, subject: `You are invited to ${access.name} on Tapscope`, text }).catch((err) => {
    log.warn("invitation e-mail failed", { to: address, err });
  });
  return { isPending: true, delivery: "email" };
}
