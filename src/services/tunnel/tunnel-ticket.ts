import type { TunnelRole } from "~/lib/protocol/tunnel.ts";
import { type Grant, grantKey, parseGrantKeys } from "~/services/access/grants.ts";
import { issueTicket, redeemTicket } from "~/services/tickets/signed-ticket.ts";

/**
 * The capability in CreateTunnel's endpoint: {tunnel, principal, namespace, org, role}, valid for a minute
 * and once, bound to who asked for what.
 */
export const TUNNEL_TICKET_TTL_MS = 60_000;

export type TunnelClaims = {
  tunnelId: string;
  /** "user:<id>", "namespaceToken:<id>" or "orgToken:<id>": who opened it. */
  principalKey: string;
  namespaceId: string;
  orgId: string;
  role: TunnelRole;
  /** What the tunnel stands on: it closes when one is revoked. */
  grants: Grant[];
  /** When CreateTunnel made it (from the ticket's expiry): for the node its socket lands on, which may be another. */
  createTimeMs?: number;
};

export function issueTunnelTicket(secret: string, claims: TunnelClaims, now: Date): string {
  return issueTicket(secret, "tunnel", { ...claims, grants: claims.grants.map(grantKey) }, TUNNEL_TICKET_TTL_MS, now);
}

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemTunnelTicket(secret: string, ticket: string, now: Date): TunnelClaims | null {
  const c = redeemTicket(secret, "tunnel", ticket, now);
  if (!c) return null;
  const { tunnelId, principalKey, namespaceId, orgId, role } = c;
  const grants = parseGrantKeys(c.grants);
  if (
    typeof tunnelId !== "string" ||
    typeof principalKey !== "string" ||
    typeof namespaceId !== "string" ||
    typeof orgId !== "string" ||
    (role !== "SELECT" && role !== "INSERT") ||
    !grants
  ) {
    return null;
  }
  const createTimeMs = typeof c.e === "number" ? c.e - TUNNEL_TICKET_TTL_MS : undefined;
  return { tunnelId, principalKey, namespaceId, orgId, role, grants, createTimeMs };
}
