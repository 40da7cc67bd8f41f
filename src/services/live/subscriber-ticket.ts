import { type Grant, grantKey, parseGrantKeys } from "~/services/access/grants.ts";
import { issueTicket, redeemTicket } from "~/services/tickets/signed-ticket.ts";

/**
 * The capability in JoinSubscriber's websocketUrl: {user, namespace, the session and membership it stands on}, valid for a minute and once. The
 * browser's iframe cannot present the session cookie cross-frame reliably, hence a ticket.
 */
export const TICKET_TTL_MS = 60_000;

/** `userId`: the viewer, a user's id or, for `tapscope tail`, the namespace token's. */
export type TicketClaims = { userId: string; namespaceId: string; grants: Grant[] };

export function issueSubscriberTicket(secret: string, claims: TicketClaims, now: Date): string {
  return issueTicket(
    secret,
    "live subscriber",
    { u: claims.userId, n: claims.namespaceId, g: claims.grants.map(grantKey) },
    TICKET_TTL_MS,
    now,
  );
}

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemSubscriberTicket(secret: string, ticket: string, now: Date): TicketClaims | null {
  const c = redeemTicket(secret, "live subscriber", ticket, now);
  if (!c || typeof c.u !== "string" || typeof c.n !== "string") return null;
  const grants = parseGrantKeys(c.g);
  if (!grants) return null;
  return { userId: c.u, namespaceId: c.n, grants };
}
