import { createHmac, randomBytes } from "node:crypto";
import type { TunnelRole } from "~/lib/protocol/tunnel.ts";
import { safeEqual } from "~/lib/ids.ts";

/**
 * The capability in CreateTunnel's endpoint: HMAC-signed {tunnel, principal, namespace, org, role, expiry,
 * nonce}, valid for a minute and once. A URL must not carry a long-lived secret, and the browser cannot set
 * headers on a WebSocket, hence a short-lived single-use ticket bound to who asked for what.
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

function key(secret: string): Buffer {
  return createHmac("sha256", secret).update("tapscope tunnel ticket v1").digest();
}

function sign(secret: string, payload: string): string {
  return createHmac("sha256", key(secret)).update(payload).digest("base64url");
}

export function issueTunnelTicket(secret: string, claims: TunnelClaims, now: Date): string {
  const payload = Buffer.from(
    JSON.stringify({
      ...claims,
      e: now.getTime() + TUNNEL_TICKET_TTL_MS,
      r: randomBytes(16).toString("base64url"),
    }),
  ).toString("base64url");
  return `${payload}.${sign(secret, payload)}`;
}

const spent = new Map<string, number>();

function sweep(nowMs: number): void {
  for (const [nonce, expiry] of spent) if (expiry <= nowMs) spent.delete(nonce);
}

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemTunnelTicket(secret: string, ticket: string, now: Date): TunnelClaims | null {
  if (ticket.length > 2048) return null;
  const dot = ticket.indexOf(".");
  if (dot < 0) return null;
  const payload = ticket.slice(0, dot);
  if (!safeEqual(sign(secret, payload), ticket.slice(dot + 1))) return null;
  let c: Record<string, unknown>;
  try {
    c = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const { tunnelId, principalKey, namespaceId, orgId, role, e, r } = c;
  if (
    typeof tunnelId !== "string" ||
    typeof principalKey !== "string" ||
    typeof namespaceId !== "string" ||
    typeof orgId !== "string" ||
    (role !== "SELECT" && role !== "INSERT") ||
    typeof e !== "number" ||
    typeof r !== "string"
  ) {
    return null;
  }
  const nowMs = now.getTime();
  if (e <= nowMs) return null;
  if (spent.size > 10_000) sweep(nowMs);
  if (spent.has(r)) return null;
  spent.set(r, e);
  return { tunnelId, principalKey, namespaceId, orgId, role };
}
