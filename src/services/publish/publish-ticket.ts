import type { EventTarget } from "~/engines/ingest/sinks.ts";
import { type Grant, grantKey, parseGrantKeys } from "~/services/access/grants.ts";
import { issueTicket, redeemTicket } from "~/services/tickets/signed-ticket.ts";

/**
 * The capability in JoinPublisher's websocketUrl: {target, org, link expiry, the token's grant}, valid for a minute and once.
 * The token itself never appears in a URL; a reconnecting publisher joins again.
 */
export const PUBLISH_TICKET_TTL_MS = 60_000;

export type PublishTicketClaims = EventTarget & {
  orgId: string | null;
  linkExpiresAt: number | null;
  grants: Grant[];
  /** The org's plan rate limit in events per second (billing on, no trial); absent: none. */
  orgRateLimit?: number;
  /** The org's plan containers limit: the socket takes a place under it at the upgrade; absent: none. */
  containerLimit?: number;
};

export function issuePublishTicket(secret: string, claims: PublishTicketClaims, now: Date): string {
  // (`e` and `r` are the ticket's own: expiry and nonce.)
  const { namespaceId: n, linkId: l, orgId: o, linkExpiresAt: x, orgRateLimit: q, containerLimit: c } = claims;
  return issueTicket(
    secret,
    "publish",
    { n, l, o, x, q: q ?? null, c: c ?? null, g: claims.grants.map(grantKey) },
    PUBLISH_TICKET_TTL_MS,
    now,
  );
}

const nullableString = (v: unknown): v is string | null => v === null || typeof v === "string";

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemPublishTicket(secret: string, ticket: string, now: Date): PublishTicketClaims | null {
  const c = redeemTicket(secret, "publish", ticket, now);
  if (!c || !nullableString(c.n) || !nullableString(c.l) || !nullableString(c.o)) return null;
  if (c.x !== null && typeof c.x !== "number") return null;
  if (c.q !== undefined && c.q !== null && typeof c.q !== "number") return null;
  if (c.c !== undefined && c.c !== null && typeof c.c !== "number") return null;
  const grants = parseGrantKeys(c.g);
  if (!grants) return null;
  return {
    namespaceId: c.n,
    linkId: c.l,
    orgId: c.o,
    linkExpiresAt: c.x,
    grants,
    ...(typeof c.q === "number" ? { orgRateLimit: c.q } : {}),
    ...(typeof c.c === "number" ? { containerLimit: c.c } : {}),
  };
}
