import { sessions } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";
import { SESSION_TTL_MS, signSessionToken } from "./session-token.ts";

/** Records a session row (so it can be revoked) and signs the cookie value that names it. */
export async function createSession({
  ctx,
  userId,
}: {
  ctx: ServiceContext;
  userId: string;
}): Promise<{ sessionId: string; token: string; expiresAt: Date }> {
  const now = ctx.now();
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  const [row] = await ctx.db.insert(sessions).values({ userId, createdAt: now, expiresAt }).returning({ id: sessions.id });
  if (!row) throw new Error("session insert returned nothing");
  const token = await signSessionToken(ctx.config.sessionSecret, { sid: row.id, sub: userId }, expiresAt);
  return { sessionId: row.id, token, expiresAt };
}
