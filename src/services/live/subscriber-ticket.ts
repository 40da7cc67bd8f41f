import { createHmac, randomBytes } from "node:crypto";
import { safeEqual } from "~/lib/ids.ts";

/**
 * The capability in JoinSubscriber's websocketUrl: HMAC-signed {user, namespace, expiry, nonce}, valid for a
 * minute and once. The browser's iframe cannot present the session cookie cross-frame reliably, and a URL must
 * not carry a long-lived secret, hence a short-lived single-use ticket.
 */
export const TICKET_TTL_MS = 60_000;

export type TicketClaims = { userId: string; namespaceId: string };

function key(secret: string): Buffer {
  return createHmac("sha256", secret).update("tapscope live subscriber ticket v1").digest();
}

function sign(secret: string, payload: string): string {
  return createHmac("sha256", key(secret)).update(payload).digest("base64url");
}

export function issueSubscriberTicket(secret: string, claims: TicketClaims, now: Date): string {
  const payload = Buffer.from(
    JSON.stringify({ u: claims.userId, n: claims.namespaceId, e: now.getTime() + TICKET_TTL_MS, r: randomBytes(16).toString("base64url") }),
  ).toString("base64url");
  return `${payload}.${sign(secret, payload)}`;
}

/** Spent nonces until their expiry (per process: a ticket is redeemed where its socket lands). */
const spent = new Map<string, number>();

function sweep(nowMs: number): void {
  for (const [nonce, expiry] of spent) if (expiry <= nowMs) spent.delete(nonce);
}

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemSubscriberTicket(secret: string, ticket: string, now: Date): TicketClaims | null {
  if (ticket.length > 1024) return null;
  const dot = ticket.indexOf(".");
  if (dot < 0) return null;
  const payload = ticket.slice(0, dot);
  if (!safeEqual(sign(secret, payload), ticket.slice(dot + 1))) return null;
  let claims: { u?: unknown; n?: unknown; e?: unknown; r?: unknown };
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const { u, n, e, r } = claims;
  if (typeof u !== "string" || typeof n !== "string" || typeof e !== "number" || typeof r !== "string") return null;
  const nowMs = now.getTime();
  if (e <= nowMs) return null;
  if (spent.size > 10_000) sweep(nowMs);
  if (spent.has(r)) return null;
  spent.set(r, e);
  return { userId: u, namespaceId: n };
}
