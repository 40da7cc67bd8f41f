import { AppError } from "~/lib/errors.ts";
import { type CallerKind, callerNames, describeCallers } from "~/lib/protocol/api/callers.ts";
import type { Principal, PrincipalOf } from "./principal.ts";

/**
 * What a request presented. `hasInvalidToken`: it sent a bearer token that authenticates nobody (unknown, deleted,
 * malformed). A session cookie that signs nobody in is no credential at all: browsers keep sending stale cookies.
 */
export type Credential = { principal: Principal | null; hasInvalidToken: boolean };

const INVALID_TOKEN = "the token is not valid (deleted, or from another server?)";
const NOT_SIGNED_IN = "not signed in";

/**
 * The one answer to a caller that a call's, socket's or route's declaration refuses (ADR 0028):
 * - a bearer token that authenticates nobody: 401, whatever the declaration (it is never taken for anonymous);
 * - no credential where anonymous is not declared: 401;
 * - a valid principal of a kind not declared: 403, naming what the call takes.
 * Returns the principal, of a declared kind. What that principal may reach is the verbs' access checks' to say.
 */
export function admitCaller<const K extends CallerKind>({
  callers,
  credential,
  what,
}: {
  callers: readonly K[];
  credential: Credential;
  /** The call's or socket's name, for the 403's text. */
  what: string;
}): PrincipalOf<K> {
  const kinds: readonly CallerKind[] = callers;
  const { principal } = credential;
  if (credential.hasInvalidToken) throw new AppError("UNAUTHORIZED", INVALID_TOKEN);
  if (!principal) {
    if (kinds.includes("anonymous")) return null as PrincipalOf<K>;
    throw new AppError("UNAUTHORIZED", kinds.includes("user") ? NOT_SIGNED_IN : `${describeCallers(callers)} is required`);
  }
  if (!kinds.includes(principal.kind)) {
    throw new AppError("FORBIDDEN", `forbidden: ${what} takes ${describeCallers(callers)}, not ${callerNames[principal.kind]}`);
  }
  return principal as PrincipalOf<K>;
}
