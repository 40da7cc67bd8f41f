/**
 * Who may make a call or open a socket (ADR 0028), by the credential the request carries:
 * - `anonymous`: none (a session cookie that no longer signs anyone in counts as none);
 * - `user`: a signed-in user, by the session cookie (`tapscope_session`);
 * - `namespaceToken`: `Authorization: Bearer tsk_...`, scoped to one namespace;
 * - `orgToken`: `Authorization: Bearer tso_...`, an org's worker token, scoped to its org.
 * Every call, socket and route declares its callers; src/services/auth/admit-caller.ts is the one place that
 * answers a caller the declaration refuses.
 */
export type CallerKind = "anonymous" | "user" | "namespaceToken" | "orgToken";

export type Callers = readonly CallerKind[];

/** Anyone, signed in or not, with any token or none. */
export const anyone = ["anonymous", "user", "namespaceToken", "orgToken"] as const satisfies Callers;

/** A signed-in user (the session cookie); tokens are refused (ADR 0003: management is user-only). */
export const signedInUser = ["user"] as const satisfies Callers;

/** Any principal: a signed-in user or a token, each reaching what its scope allows. */
export const anyPrincipal = ["user", "namespaceToken", "orgToken"] as const satisfies Callers;

/** How a refusal names each kind of caller. */
export const callerNames: Record<CallerKind, string> = {
  anonymous: "no credential",
  user: "a signed-in user",
  namespaceToken: "a namespace token (tsk_...)",
  orgToken: "an org worker token (tso_...)",
};

/** "a signed-in user, a namespace token (tsk_...) or no credential": the kinds in the order given. */
export function describeCallers(callers: Callers): string {
  const names = callers.map((k) => callerNames[k]);
  return names.length <= 1 ? (names[0] ?? "nobody") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
}
