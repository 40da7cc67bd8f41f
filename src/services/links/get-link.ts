import { eq } from "drizzle-orm";
import { links } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";
import { linkPageUrl } from "~/services/links/create-link.ts";

export type LinkInfo = {
  linkId: string;
  namespaceId: string | null;
  expiresAt: Date;
  isExpired: boolean;
  /**
   * <PUBLIC_URL>/link/<id>?expiry=<ISO date>, the same form JoinPublisher prints: the /link page parses `expiry`
   * for the countdown and hands the URL to /iframer (#url=...), which opens liveSocketUrl(linkUrl).
   */
  linkUrl: string;
};

/** Link ids are opaque url-safe strings; anything else is not a link (and never reaches the database). */
const LINK_ID = /^[A-Za-z0-9_-]{8,128}$/;

export function isLinkId(value: string): boolean {
  return LINK_ID.test(value);
}

/**
 * Anyone holding the id may look a link up (the id is the capability). An expired link is still answered,
 * with its past expiry, so the page can show the expired panel; an unknown one is NOT_FOUND.
 */
export async function getLink({ ctx, linkId }: { ctx: ServiceContext; linkId: string }): Promise<LinkInfo> {
  const notFound = new AppError("NOT_FOUND", "link not found");
  if (!isLinkId(linkId)) throw notFound;
  const [row] = await ctx.db
    .select({ id: links.id, namespaceId: links.namespaceId, expiresAt: links.expiresAt })
    .from(links)
    .where(eq(links.id, linkId))
    .limit(1);
  if (!row) throw notFound;
  return {
    linkId: row.id,
    namespaceId: row.namespaceId,
    expiresAt: row.expiresAt,
    isExpired: row.expiresAt.getTime() <= ctx.now().getTime(),
    linkUrl: linkPageUrl(ctx.config.publicUrl, row.id, row.expiresAt),
  };
}
