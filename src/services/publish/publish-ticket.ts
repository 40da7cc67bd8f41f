import { createHmac, randomBytes } from "node:crypto";
import { safeEqual } from "~/lib/ids.ts";
import type { EventTarget } from "~/services/ingest/sink.ts";

/**
 * The capability in JoinPublisher's websocketUrl: HMAC-signed {target, org, expiry, nonce}, valid for a
 * minute and once. The token itself never appears in a URL; a reconnecting publisher joins again.
 */
export const PUBLISH_TICKET_TTL_MS = 60_000;

export type PublishTicketClaims = EventTarget & { orgId: string | null; linkExpiresAt: number | null };

function sign(secret: string, payload: string): string {
  const key = createHmac("sha256", secret).update("tapscope publish ticket v1").digest();
  return createHmac("sha256", key).update(payload).digest("base64url");
}

export function issuePublishTicket(secret: string, claims: PublishTicketClaims, now: Date): string {
  const payload = Buffer.from(
    JSON.stringify({
      n: claims.namespaceId,
      l: claims.linkId,
      o: claims.orgId,
      x: claims.linkExpiresAt,
      e: now.getTime() + PUBLISH_TICKET_TTL_MS,
      r: randomBytes(16).toString("base64url"),
    }),
  ).toString("base64url");
  return `${payload}.${sign(secret, payload)}`;
}

const spent = new Map<string, number>();

const nullableString = (v: unknown): v is string | null => v === null || typeof v === "string";

/** The claims of a valid, unexpired, unspent ticket (spending it), else null. */
export function redeemPublishTicket(secret: string, ticket: string, now: Date): PublishTicketClaims | null {
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
  if (!nullableString(c.n) || !nullableString(c.l) || !nullableString(c.o) || typeof c.e !== "number" || typeof c.r !== "string") return null;
  if (c.x !== null && typeof c.x !== "number") return null;
  const nowMs = now.getTime();
  if (c.e <= nowMs) return null;
  if (spent.size > 10_000) for (const [nonce, expiry] of spent) if (expiry <= nowMs) spent.delete(nonce);
  if (spent.has(c.r)) return null;
  spent.set(c.r, c.e);
  return { namespaceId: c.n, linkId: c.l, orgId: c.o, linkExpiresAt: c.x as number | null };
}
