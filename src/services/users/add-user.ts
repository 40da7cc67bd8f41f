import { eq } from "drizzle-orm";
import { invitations, memberships, namespaceMembers, users } from "#db/schema/index.ts";
import { log } from "~/lib/logger.ts";
import type { AddUserResponse } from "~/lib/protocol/api/users.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import { normalizeEmail } from "~/services/auth/sign-in.ts";
import { assertUserLimit } from "~/services/billing/limits.ts";
import type { ServiceContext } from "~/services/context.ts";

export const ADD_USER_FORBIDDEN = "You do not have permissions to invite users to this namespace.";

/**
 * Namespace admins invite by address. A known address becomes a member (read access) at once; an unknown one
 * gets an invitation that takes effect when that address signs in. Adding an existing member changes nothing.
 */
export async function addUser({
  ctx,
  principal,
  namespaceId,
  email,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  email: string;
}): Promise<AddUserResponse> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: ADD_USER_FORBIDDEN });
  const address = normalizeEmail(email);
  await assertUserLimit(ctx, access.orgId, address);
  const now = ctx.now();
  const isPending = await ctx.db.transaction(async (tx) => {
    const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.email, address)).limit(1);
    if (!user) {
      await tx
        .insert(invitations)
        .values({ namespaceId, email: address, invitedByUserId: principal.userId, createdAt: now })
        .onConflictDoNothing();
      return true;
    }
    await tx.insert(memberships).values({ orgId: access.orgId, userId: user.id, createdAt: now }).onConflictDoNothing();
    await tx.insert(namespaceMembers).values({ namespaceId, userId: user.id, joinedAt: now }).onConflictDoNothing();
    return false;
  });
  if (ctx.mailer) {
    const text = `${principal.email} added you to the Tapscope namespace "${access.name}".\n\nSign in with this address: ${ctx.config.publicUrl}/login\n`;
    // The membership is already saved; a failed notice must not fail the call.
    ctx.mailer.send({ to: address, subject: `You were added to ${access.name} on Tapscope`, text }).catch((err) => {
      log.warn("invitation e-mail failed", { to: address, err });
    });
  }
  return { isPending };
}
