import { randomBytes } from "node:crypto";
import { and, count, eq, gt, lt, min } from "drizzle-orm";
import { loginLinks } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { LinkDelivery } from "~/lib/protocol/api/auth.ts";
import { sha256Hex } from "~/lib/server/ids.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";
import { safeNext } from "./safe-next.ts";
import { normalizeEmail } from "./sign-in.ts";

export const LOGIN_LINK_TTL_MS = 15 * 60 * 1000;
/** Links per address per TTL window: enough for retries, too few to flood an inbox. */
const MAX_LINKS_PER_WINDOW = 5;

/** The page a mailed link opens: it signs in with a POST, so whatever merely fetches the link (a mail scanner) spends nothing. */
export const LOGIN_LINK_PAGE = "/login/link";

/**
 * Sends a single-use sign-in link (15 minutes). Only the SHA-256 of its secret is stored, with the SHA-256 of the
 * asking browser's secret (`browserSecret`, kept in a cookie there): that browser signs in on opening the link, any
 * other asks first. Without SMTP the link goes to the server log as one line containing "magic link", so the embedded
 * default can sign in. Says where it went (the login page tells the person).
 */
export async function requestLoginLink({
  ctx,
  email,
  next,
  browserSecret,
}: {
  ctx: ServiceContext;
  email: string;
  next?: string;
  browserSecret?: string;
}): Promise<LinkDelivery> {
  const address = normalizeEmail(email);
  const now = ctx.now();
  const [recent] = await ctx.db
    .select({ n: count(), oldest: min(loginLinks.createdAt) })
    .from(loginLinks)
    .where(and(eq(loginLinks.email, address), gt(loginLinks.createdAt, new Date(now.getTime() - LOGIN_LINK_TTL_MS))));
  if ((recent?.n ?? 0) >= MAX_LINKS_PER_WINDOW) {
    const retryAfterMs = (recent?.oldest?.getTime() ?? now.getTime()) + LOGIN_LINK_TTL_MS - now.getTime();
    throw new AppError("RATE_LIMITED", "too many sign-in links requested; try again in a few minutes", { retryAfterMs });
  }

  // Spent and expired links of this address are of no further use (the count above only looks at live ones).
  await ctx.db.delete(loginLinks).where(and(eq(loginLinks.email, address), lt(loginLinks.expiresAt, now)));

  const secret = randomBytes(32).toString("base64url");
  await ctx.db.insert(loginLinks).values({
    email: address,
    tokenHash: sha256Hex(secret),
    next: next === undefined ? null : safeNext(next),
    browserHash: browserSecret === undefined ? null : sha256Hex(browserSecret),
    createdAt: now,
    expiresAt: new Date(now.getTime() + LOGIN_LINK_TTL_MS),
  });
  const url = `${ctx.config.publicUrl}${LOGIN_LINK_PAGE}?token=${secret}`;

  if (!ctx.mailer) {
    log.info(`magic link for ${address}: ${url}`);
    return "log";
  }
  try {
    await ctx.mailer.send({
      to: address,
      subject: "Your Tapscope sign-in link",
      text: `Sign in to Tapscope:\n\n${url}\n\nThe link works once and expires in 15 minutes. If you did not ask for it, ignore this e-mail.\n`,
      html: `<p>Sign in to Tapscope:</p><p><a href="${url}">Sign in</a></p><p>The link works once and expires in 15 minutes. If you did not ask for it, ignore this e-mail.</p>`,
    });
  } catch (err) {
    log.error("sign-in e-mail failed", { to: address, err });
    throw new AppError("UNAVAILABLE", "could not send the sign-in e-mail; try again later");
  }
  return "email";
}
