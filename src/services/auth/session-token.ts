import { jwt } from "@elysiajs/jwt";

export const SESSION_COOKIE = "tapscope_session";
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

type SessionClaims = { sid: string; sub: string };

const signers = new Map<string, ReturnType<typeof signerFor>>();

function signerFor(secret: string) {
  return jwt({ name: "jwt", secret, alg: "HS256", iss: "tapscope", aud: "tapscope-session" }).decorator.jwt;
}

function signer(secret: string) {
  let s = signers.get(secret);
  if (!s) {
    s = signerFor(secret);
    signers.set(secret, s);
  }
  return s;
}

/** The cookie value: a signed JWT naming the server-side session row (revocable) and its user. */
export function signSessionToken(secret: string, claims: SessionClaims, expiresAt: Date): Promise<string> {
  return signer(secret).sign({ ...claims, exp: Math.floor(expiresAt.getTime() / 1000) });
}

/** Checks the signature only; the caller checks the session row (revocation, expiry by the injected clock). */
export async function verifySessionToken(secret: string, token: string): Promise<SessionClaims | null> {
  // Expiry is enforced against the sessions table with the service clock, so jose's wall-clock check is relaxed.
  const payload = await signer(secret).verify(token, {
    issuer: "tapscope",
    audience: "tapscope-session",
    algorithms: ["HS256"],
    clockTolerance: SESSION_TTL_MS / 1000,
  });
  if (!payload) return null;
  const { sid, sub } = payload as Record<string, unknown>;
  if (typeof sid !== "string" || typeof sub !== "string") return null;
  return { sid, sub };
}
