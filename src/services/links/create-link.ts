import { links } from "#db/schema/index.ts";
import { randomId } from "~/lib/server/ids.ts";
import type { ServiceContext } from "~/services/context.ts";

/** An anonymous run's link lives for a day (issue 3). */
export const LINK_TTL_MS = 24 * 60 * 60 * 1000;

export type CreatedLink = { linkId: string; namespaceId: string | null; expiresAt: Date; linkUrl: string };

/** The page a person opens: <PUBLIC_URL>/link/<id>?expiry=<ISO date> (the link URL carries its expiry). */
export function linkPageUrl(publicUrl: string, linkId: string, expiresAt: Date): string {
  return `${publicUrl}/link/${encodeURIComponent(linkId)}?expiry=${encodeURIComponent(expiresAt.toISOString())}`;
}

/**
 * Creates a shared link. The id is the capability (anyone holding it can watch, and publish into it),
 * so it is 128 random bits unless the caller brings its own unguessable id (TAPSCOPE_LINK_ID).
 */
export async function createLink({
  ctx,
  namespaceId = null,
  linkId = randomId(16),
  ttlMs = LINK_TTL_MS,
}: {
  ctx: ServiceContext;
  namespaceId?: string | null;
  linkId?: string;
  ttlMs?: number;
}): Promise<CreatedLink> {
  const expiresAt = new Date(ctx.now().getTime() + ttlMs);
  await ctx.db.insert(links).values({ id: linkId, namespaceId, expiresAt, createdAt: ctx.now() });
  return { linkId, namespaceId, expiresAt, linkUrl: linkPageUrl(ctx.config.publicUrl, linkId, expiresAt) };
}
