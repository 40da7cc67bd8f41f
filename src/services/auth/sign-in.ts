import { eq } from "drizzle-orm";
import { users } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The common end of every sign-in (magic link, Google, GitHub): finds or creates the account for a verified address.
 * Invitations to it wait for the person's answer on the dashboard (ListMyInvitations).
 */
export async function signIn({ ctx, email }: { ctx: ServiceContext; email: string }): Promise<{ userId: string; email: string }> {
  const address = normalizeEmail(email);
  await ctx.db.insert(users).values({ email: address, createdAt: ctx.now() }).onConflictDoNothing({ target: users.email });
  const [user] = await ctx.db.select({ id: users.id }).from(users).where(eq(users.email, address)).limit(1);
  if (!user) throw new Error("user row missing after upsert");
  return { userId: user.id, email: address };
}
