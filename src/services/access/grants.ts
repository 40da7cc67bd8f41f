import { and, gt, inArray, isNull } from "drizzle-orm";
import { namespaceMembers, namespaces, namespaceTokens, orgTokens, sessions } from "#db/schema/index.ts";
import { uuidSource } from "~/lib/server/ids.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * A credential an open socket stands on: the session that signed its user in, the token that opened it, the
 * user's membership (with write, for writers) of the namespace it reads, or, for a token's socket on a namespace,
 * that namespace itself (an org token outlives a deleted namespace). When one stops holding, every socket standing
 * on it closes (GrantedSockets).
 */
export type Grant =
  | { kind: "session"; sessionId: string }
  | { kind: "namespaceToken"; tokenId: string }
  | { kind: "orgToken"; tokenId: string }
  | { kind: "member"; userId: string; namespaceId: string; write: boolean }
  | { kind: "namespace"; namespaceId: string };

/** What a person is told when a grant has ended: a closed socket's reason, a refused ticket's error. */
export const grantEndedReason: Record<Grant["kind"], string> = {
  session: "signed out",
  namespaceToken: "token deleted",
  orgToken: "token deleted",
  member: "no longer a member of this namespace",
  namespace: "namespace deleted",
};

/** Closes what a grant authorised once it ends (the open sockets registered under it). */
export type SocketRevoker = { revoke(grant: Grant): void };

/** The grant's identity, also its form inside socket tickets. */
export function grantKey(grant: Grant): string {
  switch (grant.kind) {
    case "session":
      return `session:${grant.sessionId}`;
    case "namespaceToken":
    case "orgToken":
      return `${grant.kind}:${grant.tokenId}`;
    case "member":
      return `${grant.write ? "writer" : "member"}:${grant.userId}:${grant.namespaceId}`;
    case "namespace":
      return `namespace:${grant.namespaceId}`;
  }
}

const keyPattern = new RegExp(`^(session|namespaceToken|orgToken|member|writer|namespace):(${uuidSource})(?::(${uuidSource}))?$`, "i");

/** The grant of a key (from a ticket), or null for anything else. */
export function parseGrantKey(key: unknown): Grant | null {
  if (typeof key !== "string") return null;
  const m = keyPattern.exec(key);
  if (!m) return null;
  const [, kind, first, second] = m as unknown as [string, string, string, string | undefined];
  if (kind === "member" || kind === "writer") {
    return second ? { kind: "member", userId: first, namespaceId: second, write: kind === "writer" } : null;
  }
  if (second) return null;
  if (kind === "session") return { kind, sessionId: first };
  if (kind === "namespace") return { kind, namespaceId: first };
  return { kind: kind as "namespaceToken" | "orgToken", tokenId: first };
}

/** Every key of a ticket claim, or null when any is not a grant (a ticket without them is refused). */
export function parseGrantKeys(keys: unknown): Grant[] | null {
  if (!Array.isArray(keys) || keys.length > 8) return null;
  const grants = keys.map(parseGrantKey);
  return grants.every((g) => g !== null) ? (grants as Grant[]) : null;
}

/** What a principal's socket on a namespace stands on; `write` when the socket writes as a user. */
export function grantsOf(principal: Principal, access?: { namespaceId: string; write?: boolean }): Grant[] {
  if (principal.kind === "namespaceToken" || principal.kind === "orgToken") {
    const grants: Grant[] = [{ kind: principal.kind, tokenId: principal.tokenId }];
    if (access) grants.push({ kind: "namespace", namespaceId: access.namespaceId });
    return grants;
  }
  const grants: Grant[] = [{ kind: "session", sessionId: principal.sessionId }];
  if (access) grants.push({ kind: "member", userId: principal.userId, namespaceId: access.namespaceId, write: access.write ?? false });
  return grants;
}

/** Ids per query: bounds the statement's size whatever the number of open sockets. */
const chunkSize = 500;

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += chunkSize) out.push(items.slice(i, i + chunkSize));
  return out;
}

/** The keys of the grants that no longer hold: session revoked or expired, token deleted, membership or write gone, namespace deleted. */
export async function findRevokedGrants({ ctx, grants }: { ctx: ServiceContext; grants: Grant[] }): Promise<Set<string>> {
  const byKey = new Map(grants.map((g) => [grantKey(g), g]));
  const held = new Set<string>();
  const ids = (kind: Grant["kind"]) =>
    [...byKey.values()].flatMap((g) =>
      g.kind !== kind
        ? []
        : g.kind === "session"
          ? [g.sessionId]
          : "tokenId" in g
            ? [g.tokenId]
            : g.kind === "namespace"
              ? [g.namespaceId]
              : [],
    );

  for (const batch of chunks(ids("session"))) {
    const rows = await ctx.db
      .select({ id: sessions.id })
      .from(sessions)
      .where(and(inArray(sessions.id, batch), isNull(sessions.revokedAt), gt(sessions.expiresAt, ctx.now())));
    for (const r of rows) held.add(grantKey({ kind: "session", sessionId: r.id }));
  }
  for (const batch of chunks(ids("namespaceToken"))) {
    const rows = await ctx.db.select({ id: namespaceTokens.id }).from(namespaceTokens).where(inArray(namespaceTokens.id, batch));
    for (const r of rows) held.add(grantKey({ kind: "namespaceToken", tokenId: r.id }));
  }
  for (const batch of chunks(ids("orgToken"))) {
    const rows = await ctx.db.select({ id: orgTokens.id }).from(orgTokens).where(inArray(orgTokens.id, batch));
    for (const r of rows) held.add(grantKey({ kind: "orgToken", tokenId: r.id }));
  }
  for (const batch of chunks(ids("namespace"))) {
    const rows = await ctx.db.select({ id: namespaces.id }).from(namespaces).where(inArray(namespaces.id, batch));
    for (const r of rows) held.add(grantKey({ kind: "namespace", namespaceId: r.id }));
  }
  const users = [...new Set([...byKey.values()].flatMap((g) => (g.kind === "member" ? [g.userId] : [])))];
  for (const batch of chunks(users)) {
    const rows = await ctx.db
      .select({ userId: namespaceMembers.userId, namespaceId: namespaceMembers.namespaceId, hasWrite: namespaceMembers.hasWrite })
      .from(namespaceMembers)
      .where(inArray(namespaceMembers.userId, batch));
    for (const r of rows) {
      held.add(grantKey({ kind: "member", userId: r.userId, namespaceId: r.namespaceId, write: false }));
      if (r.hasWrite) held.add(grantKey({ kind: "member", userId: r.userId, namespaceId: r.namespaceId, write: true }));
    }
  }
  return new Set([...byKey.keys()].filter((k) => !held.has(k)));
}
