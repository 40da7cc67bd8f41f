import { eq } from "drizzle-orm";
import { orgTokens } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Whether an org (worker) token still exists: a connected worker whose token was deleted is sent away. */
export async function isOrgTokenActive({ ctx, tokenId }: { ctx: ServiceContext; tokenId: string }): Promise<boolean> {
  const [row] = await ctx.db.select({ id: orgTokens.id }).from(orgTokens).where(eq(orgTokens.id, tokenId)).limit(1);
  return Boolean(row);
}
