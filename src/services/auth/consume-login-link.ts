import { and, eq, gt, isNull } from "drizzle-orm";
import { loginLinks } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { safeEqual, sha256Hex } from "~/lib/server/ids.ts";
import type { ServiceContext } from "~/services/context.ts";

export type LoginLinkOutcome = { kind: "spent"; email: string; next: string | null } | { kind: "confirm"; email: string };

/**
 * Spends a sign-in link, once (one conditional UPDATE, so two clicks cannot both win), when it is opened in the browser
 * that asked for it (`browserSecret` is that browser's cookie) or the person confirmed whose account it signs into.
 * Otherwise nothing is spent and the address is returned, to ask: a link someone mailed to their own address and sent
 * on must not sign the person who opens it into that account unawares.
 */
export async function consumeLoginLink({
  ctx,
  secret,
  browserSecret,
  isConfirmed = false,
}: {
  ctx: ServiceContext;
  secret: string;
  browserSecret?: string;
  isConfirmed?: boolean;
}): Promise<LoginLinkOutcome> {
  const now = ctx.now();
  const tokenHash = sha256Hex(secret);
  const isLive = and(eq(loginLinks.tokenHash, tokenHash), isNull(loginLinks.usedAt), gt(loginLinks.expiresAt, now));
  const invalid = new AppError("UNAUTHORIZED", "this sign-in link is invalid, used or expired");
  const [link] = await ctx.db
    .select({ email: loginLinks.email, browserHash: loginLinks.browserHash })
    .from(loginLinks)
    .where(isLive)
    .limit(1);
  if (!link) throw invalid;
  const isSameBrowser = link.browserHash !== null && browserSecret !== undefined && safeEqual(sha256Hex(browserSecret), link.browserHash);
  if (!isSameBrowser && !isConfirmed) return { kind: "confirm", email: link.email };
  const [row] = await ctx.db
    .update(loginLinks)
    .set({ usedAt: now })
    .where(isLive)
    .returning({ email: loginLinks.email, next: loginLinks.next });
  if (!row) throw invalid;
  return { kind: "spent", ...row };
}
