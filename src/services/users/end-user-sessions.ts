import { and, eq, gt, isNull } from "drizzle-orm";
import { namespaceMembers, sessions } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { EndUserSessionsResponse } from "~/lib/protocol/api/users.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

export const END_SESSIONS_FORBIDDEN = "You do not have permissions to sign out users of this namespace.";

/**
 * A namespace admin signs one of its members out everywhere (a lost laptop, a leaving colleague): every session of
 * theirs is revoked, so their cookies stop working and the sockets those opened close at once. Sessions belong to the
 * person, not to a namespace, so this reaches their other orgs' pages too; they can sign in again (removing them from
 * the namespace is what keeps them out of it).
 */
export async function endUserSessions({
  ctx,
  principal,
  namespaceId,
  userId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  userId: string;
}): Promise<EndUserSessionsResponse> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: END_SESSIONS_FORBIDDEN });
  const notMember = new AppError("NOT_FOUND", "that user is not a member of this namespace");
  if (!isUuid(userId)) throw notMember;
  const [member] = await ctx.db
    .select({ userId: namespaceMembers.userId })
    .from(namespaceMembers)
    .where(and(eq(namespaceMembers.namespaceId, namespaceId), eq(namespaceMembers.userId, userId)))
    .limit(1);
  if (!member) throw notMember;
  const now = ctx.now();
  const ended = await ctx.db
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)))
    .returning({ id: sessions.id });
  for (const { id } of ended) ctx.sockets?.revoke({ kind: "session", sessionId: id });
  return { endedSessions: ended.length };
}
