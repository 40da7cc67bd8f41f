import { and, eq, isNull } from "drizzle-orm";
import { sessions } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

export async function revokeSession({ ctx, sessionId }: { ctx: ServiceContext; sessionId: string }): Promise<void> {
  await ctx.db
    .update(sessions)
    .set({ revokedAt: ctx.now() })
    .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
}
