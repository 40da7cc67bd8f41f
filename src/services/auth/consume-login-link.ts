import { and, eq, gt, isNull } from "drizzle-orm";
import { loginLinks } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { sha256Hex } from "~/lib/ids.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Spends a sign-in link exactly once (one conditional UPDATE, so two clicks cannot both win). */
export async function consumeLoginLink({
  ctx,
  secret,
}: {
  ctx: ServiceContext;
  secret: string;
}): Promise<{ email: string; next: string | null }> {
  const now = ctx.now();
  const [row] = await ctx.db
    .update(loginLinks)
    .set({ usedAt: now })
    .where(and(eq(loginLinks.tokenHash, sha256Hex(secret)), isNull(loginLinks.usedAt), gt(loginLinks.expiresAt, now)))
    .returning({ email: loginLinks.email, next: loginLinks.next });
  if (!row) throw new AppError("UNAUTHORIZED", "this sign-in link is invalid, used or expired");
  return row;
}
