import { and, eq, gt, isNull, lt, or } from "drizzle-orm";
import { namespaces, namespaceTokens, orgTokens, sessions, users } from "#db/schema/index.ts";
import { isUuid } from "~/lib/server/ids.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { Principal } from "./principal.ts";
import { verifySessionToken } from "./session-token.ts";
import { hashToken, tokenKind } from "./token-format.ts";

/**
 * Resolves the caller from a session cookie value or an `Authorization: Bearer` header.
 * A bearer header, when present, wins; an invalid one yields null (never falls back to the cookie).
 */
export async function authenticate({
  ctx,
  sessionCookie,
  authorization,
}: {
  ctx: ServiceContext;
  sessionCookie?: string;
  authorization?: string;
}): Promise<Principal | null> {
  if (authorization) return authenticateBearer(ctx, authorization);
  if (sessionCookie) return authenticateSession(ctx, sessionCookie);
  return null;
}

async function authenticateSession(ctx: ServiceContext, cookie: string): Promise<Principal | null> {
  const claims = await verifySessionToken(ctx.config.sessionSecret, cookie);
  if (!claims || !isUuid(claims.sid) || !isUuid(claims.sub)) return null;
  const [row] = await ctx.db
    .select({ userId: users.id, email: users.email })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.id, claims.sid), eq(sessions.userId, claims.sub), isNull(sessions.revokedAt), gt(sessions.expiresAt, ctx.now())))
    .limit(1);
  if (!row) return null;
  return { kind: "user", userId: row.userId, email: row.email, sessionId: claims.sid };
}

async function authenticateBearer(ctx: ServiceContext, authorization: string): Promise<Principal | null> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const token = match?.[1];
  if (!token) return null;
  const kind = tokenKind(token);
  if (kind === "namespace") {
    const [row] = await ctx.db
      .select({
        tokenId: namespaceTokens.id,
        namespaceId: namespaceTokens.namespaceId,
        orgId: namespaces.orgId,
        lastUsedAt: namespaceTokens.lastUsedAt,
      })
      .from(namespaceTokens)
      .innerJoin(namespaces, eq(namespaces.id, namespaceTokens.namespaceId))
      .where(eq(namespaceTokens.tokenHash, hashToken(token)))
      .limit(1);
    if (!row) return null;
    const { lastUsedAt, ...principal } = row;
    if (isStale(ctx, lastUsedAt)) {
      const since = new Date(ctx.now().getTime() - LAST_USED_EVERY_MS);
      await ctx.db
        .update(namespaceTokens)
        .set({ lastUsedAt: ctx.now() })
        .where(and(eq(namespaceTokens.id, row.tokenId), or(isNull(namespaceTokens.lastUsedAt), lt(namespaceTokens.lastUsedAt, since))));
    }
    return { kind: "namespaceToken", ...principal };
  }
  if (kind === "org") {
    const [row] = await ctx.db
      .select({ tokenId: orgTokens.id, orgId: orgTokens.orgId, lastUsedAt: orgTokens.lastUsedAt })
      .from(orgTokens)
      .where(eq(orgTokens.tokenHash, hashToken(token)))
      .limit(1);
    if (!row) return null;
    const { lastUsedAt, ...principal } = row;
    if (isStale(ctx, lastUsedAt)) {
      const since = new Date(ctx.now().getTime() - LAST_USED_EVERY_MS);
      await ctx.db
        .update(orgTokens)
        .set({ lastUsedAt: ctx.now() })
        .where(and(eq(orgTokens.id, row.tokenId), or(isNull(orgTokens.lastUsedAt), lt(orgTokens.lastUsedAt, since))));
    }
    return { kind: "orgToken", ...principal };
  }
  return null;
}

/** A token's "last used" is written at most this often: a busy token costs one write a minute, not one per call. */
const LAST_USED_EVERY_MS = 60_000;

function isStale(ctx: ServiceContext, lastUsedAt: Date | null): boolean {
  return lastUsedAt === null || ctx.now().getTime() - lastUsedAt.getTime() >= LAST_USED_EVERY_MS;
}
