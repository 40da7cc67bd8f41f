import type { CallerKind } from "~/lib/protocol/api/callers.ts";

/** Who is calling: a signed-in user (session cookie) or a bearer token scoped to a namespace or an org. */
export type Principal =
  | { kind: "user"; userId: string; email: string; sessionId: string }
  | { kind: "namespaceToken"; tokenId: string; namespaceId: string; orgId: string }
  | { kind: "orgToken"; tokenId: string; orgId: string };

export type UserPrincipal = Extract<Principal, { kind: "user" }>;
export type NamespaceTokenPrincipal = Extract<Principal, { kind: "namespaceToken" }>;

/** The principal a call declared for these kinds of caller receives: null stands for `anonymous`. */
export type PrincipalOf<K extends CallerKind> = Extract<Principal, { kind: K }> | ("anonymous" extends K ? null : never);
