import { randomBytes } from "node:crypto";
import { sha256Hex } from "~/lib/server/ids.ts";

/** Namespace (tracer) tokens and org (worker) tokens: a fixed prefix and 256 random bits, base64url. */
export const NAMESPACE_TOKEN_PREFIX = "tsk_";
export const ORG_TOKEN_PREFIX = "tso_";
const SUFFIX_LENGTH = 6;
const TOKEN_PATTERN = /^ts[ko]_[A-Za-z0-9_-]{43}$/;

export type TokenKind = "namespace" | "org";

export function newToken(kind: TokenKind): { token: string; hash: string; suffix: string } {
  const prefix = kind === "namespace" ? NAMESPACE_TOKEN_PREFIX : ORG_TOKEN_PREFIX;
  const token = prefix + randomBytes(32).toString("base64url");
  return { token, hash: hashToken(token), suffix: token.slice(-SUFFIX_LENGTH) };
}

export function hashToken(token: string): string {
  return sha256Hex(token);
}

export function tokenKind(token: string): TokenKind | null {
  if (!TOKEN_PATTERN.test(token)) return null;
  return token.startsWith(NAMESPACE_TOKEN_PREFIX) ? "namespace" : "org";
}

/** What lists show: the fixed prefix, '...', and the last characters (never enough to use the token). */
export function displayName(kind: TokenKind, suffix: string): string {
  return `${kind === "namespace" ? NAMESPACE_TOKEN_PREFIX : ORG_TOKEN_PREFIX}...${suffix}`;
}
