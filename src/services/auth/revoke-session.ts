import { and, eq, isNull } from "drizzle-orm";
import { sessions } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Signs the session out: its cookie stops authenticating and the sockets it opened (live view, tunnels) close. */
export async function revokeSession({ ctx, sessionId }: { ctx: ServiceContext; sessionId: string }): Promise<void> {
  await ctx.db
    .update(sessions)
    .set({ revokedAt: ctx.now() })
    .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
  ctx.sockets?.revoke({ kind: "session", sessionId });
}
