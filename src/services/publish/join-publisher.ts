import { eq } from "drizzle-orm";
import { links } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { PLAN_RATE_LIMIT_PER_SECOND } from "~/lib/plans.ts";
import type { JoinPublisherResponse } from "~/lib/protocol/api/publish.ts";
import { publishPath } from "~/lib/protocol/publish.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";
import { grantsOf } from "~/services/access/grants.ts";
import type { NamespaceTokenPrincipal } from "~/services/auth/principal.ts";
import { assertContainerLimit, containerLimit, limitingPlan } from "~/services/billing/limits.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createLink, linkPageUrl } from "~/services/links/create-link.ts";
import { isLinkId } from "~/services/links/get-link.ts";
import { issuePublishTicket } from "./publish-ticket.ts";

/** A link id chosen by the caller must be as unguessable as ours (>= 128 bits of base64url). */
const STRONG_LINK_ID = /^[A-Za-z0-9_-]{22,128}$/;

/**
 * Where a publisher's events go, and the socket to send them on:
 * - a namespace token: its namespace (and a link too, when a link id is given);
 * - no token: a new anonymous link that expires after 24 hours, or the given link if it is anonymous and live.
 * The link id is the capability for a link, to publish as to watch. `admitNewLink` is asked before an anonymous
 * link is created (it throws when the caller is over its budget).
 */
export async function joinPublisher({
  ctx,
  principal,
  linkId,
  admitNewLink,
  runningPublishers,
}: {
  ctx: ServiceContext;
  principal: NamespaceTokenPrincipal | null;
  linkId?: string;
  admitNewLink?: () => void;
  /** Publishers of an org connected now (the containers limit's early answer; the socket's upgrade decides). */
  runningPublishers?: (orgId: string) => number;
}): Promise<JoinPublisherResponse> {
  const namespaceId = principal?.namespaceId ?? null;
  const orgId = principal?.orgId ?? null;
  const plan = orgId ? await limitingPlan(ctx, orgId) : null;
  if (orgId && runningPublishers) assertContainerLimit(plan, runningPublishers(orgId));
  const orgRateLimit = plan ? PLAN_RATE_LIMIT_PER_SECOND : undefined;
  const containers = containerLimit(plan);

  let link: { linkId: string; expiresAt: Date; linkUrl: string } | null = null;
  if (linkId !== undefined) {
    if (!isLinkId(linkId)) throw new AppError("BAD_REQUEST", "invalid link id");
    const [row] = await ctx.db.select().from(links).where(eq(links.id, linkId)).limit(1);
    if (row) {
      if (row.expiresAt.getTime() <= ctx.now().getTime()) {
        throw new AppError("NOT_FOUND", "this link has expired; run again without a link id for a new one");
      }
      if (row.namespaceId !== null && row.namespaceId !== namespaceId) {
        throw new AppError("FORBIDDEN", "this link belongs to a namespace: publish with that namespace's token");
      }
      link = { linkId: row.id, expiresAt: row.expiresAt, linkUrl: linkPageUrl(ctx.config.publicUrl, row.id, row.expiresAt) };
    } else {
      if (!STRONG_LINK_ID.test(linkId)) throw new AppError("BAD_REQUEST", "a new link id must be at least 22 url-safe characters");
      if (!namespaceId) admitNewLink?.();
      link = await createLink({ ctx, namespaceId, linkId });
    }
  } else if (!namespaceId) {
    admitNewLink?.();
    link = await createLink({ ctx });
  }

  const ticket = issuePublishTicket(
    ctx.config.sessionSecret,
    {
      namespaceId,
      linkId: link?.linkId ?? null,
      orgId,
      linkExpiresAt: link ? link.expiresAt.getTime() : null,
      grants: principal ? grantsOf(principal, namespaceId ? { namespaceId } : undefined) : [],
      ...(orgRateLimit ? { orgRateLimit } : {}),
      ...(containers !== null ? { containerLimit: containers } : {}),
    },
    ctx.now(),
  );
  const response: JoinPublisherResponse = {
    websocketUrl: websocketUrl(ctx.config.publicUrl, `${publishPath}?ticket=${encodeURIComponent(ticket)}`),
  };
  if (namespaceId) response.namespaceId = namespaceId;
  if (link) {
    response.linkId = link.linkId;
    response.linkUrl = link.linkUrl;
    response.expiresAt = link.expiresAt.toISOString();
  }
  return response;
}
