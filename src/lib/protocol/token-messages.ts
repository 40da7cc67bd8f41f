/** Whose token: a namespace's (publishing, queries) or an org's (its self-hosted worker). */
export type TokenScope = "namespace" | "org";

/** The 403 text for a token action the caller may not take: sent by the server, shown by the dashboard's modal. */
export function tokenForbiddenText(action: "generate" | "delete" | "rename", scope: TokenScope): string {
  return `You do not have permissions to ${action} a token in this ${scope}.`;
}

/** A token's name is at most this long (lib/protocol/api/tokens.ts). */
export const MAX_TOKEN_LABEL = 64;
