import { and, eq, isNull } from "drizzle-orm";
import { invitations, memberships, namespaceMembers, namespaces, users } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The common end of every sign-in (magic link, Google, GitHub): finds or creates the account for a
 * verified address and turns its pending invitations into memberships.
 */
export async function signIn({ ctx, email }: { ctx: ServiceContext; email: string }): Promise<{ userId: string; email: string }> {
  const address = normalizeEmail(email);
  const now = ctx.now();
  return ctx.db.transaction(async (tx) => {
    await tx.insert(users).values({ email: address, createdAt: now }).onConflictDoNothing({ target: users.email });
    const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.email, address)).limit(1);
    if (!user) throw new Error("user row missing after upsert");

    const pending = await tx
      .select({ id: invitations.id, namespaceId: invitations.namespaceId, orgId: namespaces.orgId, hasWrite: invitations.hasWrite })
      .from(invitations)
      .innerJoin(namespaces, eq(namespaces.id, invitations.namespaceId))
      .where(and(eq(invitations.email, address), isNull(invitations.acceptedAt)));
    for (const invite of pending) {
      await tx.insert(memberships).values({ orgId: invite.orgId, userId: user.id, createdAt: now }).onConflictDoNothing();
      await tx
        .insert(namespaceMembers)
        .values({ namespaceId: invite.namespaceId, userId: user.id, hasWrite: invite.hasWrite, joinedAt: now })
        .onConflictDoNothing();
      await tx.update(invitations).set({ acceptedAt: now }).where(eq(invitations.id, invite.id));
    }
    return { userId: user.id, email: address };
  });
}
