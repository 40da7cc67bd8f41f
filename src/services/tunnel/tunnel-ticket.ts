import type { TunnelRole } from "~/lib/protocol/tunnel.ts";
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
};

export function issueTunnelTicket(secret: string, claims: TunnelClaims, now: Date): string {
  return issueTicket(secret, "tunnel", { ...claims }, TUNNEL_TICKET_TTL_MS, now);
}

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemTunnelTicket(secret: string, ticket: string, now: Date): TunnelClaims | null {
  const c = redeemTicket(secret, "tunnel", ticket, now);
  if (!c) return null;
  const { tunnelId, principalKey, namespaceId, orgId, role } = c;
  if (
    typeof tunnelId !== "string" ||
    typeof principalKey !== "string" ||
    typeof namespaceId !== "string" ||
    typeof orgId !== "string" ||
    (role !== "SELECT" && role !== "INSERT")
  ) {
    return null;
  }
  return { tunnelId, principalKey, namespaceId, orgId, role };
}
