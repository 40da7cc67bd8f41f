import { createHmac, randomBytes } from "node:crypto";
import { safeEqual } from "~/lib/server/ids.ts";

/**
 * Short-lived, single-use capabilities carried in WebSocket URLs (publish, live subscribe, tunnel): the
 * browser cannot set headers on a WebSocket and a URL must never carry a long-lived secret. A ticket is
 * `base64url(JSON claims + expiry + nonce) . HMAC`, keyed per purpose so one kind can never pass as another.
 */
const MAX_TICKET_LENGTH = 2048;

export type TicketPurpose = "publish" | "live subscriber" | "tunnel";

function sign(secret: string, purpose: TicketPurpose, payload: string): string {
  const key = createHmac("sha256", secret).update(`tapscope ${purpose} ticket v1`).digest();
  return createHmac("sha256", key).update(payload).digest("base64url");
}

export function issueTicket(secret: string, purpose: TicketPurpose, claims: Record<string, unknown>, ttlMs: number, now: Date): string {
  const payload = Buffer.from(JSON.stringify({ ...claims, e: now.getTime() + ttlMs, r: randomBytes(16).toString("base64url") })).toString(
    "base64url",
  );
  return `${payload}.${sign(secret, purpose, payload)}`;
}

/** Spent nonces until their expiry (per process: a ticket is redeemed where its socket lands). */
const spent = new Map<string, number>();

function sweep(nowMs: number): void {
  for (const [nonce, expiry] of spent) if (expiry <= nowMs) spent.delete(nonce);
}

/**
 * The claims of a genuine, unexpired, unspent ticket of this purpose (spending it), else null. The caller
 * checks the claims' shape before using them.
 */
export function redeemTicket(secret: string, purpose: TicketPurpose, ticket: string, now: Date): Record<string, unknown> | null {
  if (ticket.length > MAX_TICKET_LENGTH) return null;
  const dot = ticket.indexOf(".");
  if (dot < 0) return null;
  const payload = ticket.slice(0, dot);
  if (!safeEqual(sign(secret, purpose, payload), ticket.slice(dot + 1))) return null;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (typeof claims !== "object" || claims === null) return null;
  const { e, r } = claims as { e?: unknown; r?: unknown };
  if (typeof e !== "number" || typeof r !== "string") return null;
  const nowMs = now.getTime();
  if (e <= nowMs) return null;
  if (spent.size > 10_000) sweep(nowMs);
  if (spent.has(r)) return null;
  spent.set(r, e);
  return claims as Record<string, unknown>;
}

/**
 * A cluster's check that a ticket is spent once across all its nodes (the broker's SET NX): true when this is the first
 * use. Absent on one server, where the per-process set above is the whole truth.
 */
export type SpendTicketEverywhere = (nonce: string, expiresAtMs: number) => Promise<boolean>;

/** After redeemTicket accepted a ticket here: whether no other node of the cluster spent it first. */
export async function isFirstUseEverywhere(ticket: string, spendEverywhere: SpendTicketEverywhere | undefined): Promise<boolean> {
  if (!spendEverywhere) return true;
  try {
    const { e, r } = JSON.parse(Buffer.from(ticket.slice(0, ticket.indexOf(".")), "base64url").toString("utf8")) as {
      e: number;
      r: string;
    };
    return await spendEverywhere(r, e);
  } catch {
    return false;
  }
}
