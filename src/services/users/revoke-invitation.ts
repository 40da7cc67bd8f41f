import { and, eq, isNull } from "drizzle-orm";
import { invitations } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

export const REVOKE_INVITATION_FORBIDDEN = "You do not have permissions to revoke invitations to this namespace.";

const invitationNotFound = () => new AppError("NOT_FOUND", "invitation not found");

/** A namespace admin withdraws a pending invitation: the address can no longer accept it. */
export async function revokeInvitation({
  ctx,
  principal,
  invitationId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  invitationId: string;
}): Promise<void> {
  if (!isUuid(invitationId)) throw invitationNotFound();
  const pending = and(eq(invitations.id, invitationId), isNull(invitations.acceptedAt));
  const [row] = await ctx.db.select({ namespaceId: invitations.namespaceId }).from(invitations).where(pending).limit(1);
  if (!row) throw invitationNotFound();
  try {
    await requireNamespaceAccess({
      ctx,
      principal,
      namespaceId: row.namespaceId,
      write: true,
      forbiddenMessage: REVOKE_INVITATION_FORBIDDEN,
    });
  } catch (err) {
    // An invitation to a namespace the caller cannot see is as unknown as one that does not exist.
    if (err instanceof AppError && err.code === "NOT_FOUND") throw invitationNotFound();
    throw err;
  }
  const deleted = await ctx.db.delete(invitations).where(pending).returning({ id: invitations.id });
  // Accepted meanwhile: the person is a member now, and removing them is another step.
  if (deleted.length === 0) throw invitationNotFound();
}
