import { authenticate } from "~/services/auth/authenticate.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { PageEnv } from "~/ui/env.ts";

/** Loaders' server side: the session is checked with the auth service, never by calling our own HTTP API. */
export function createServerEnv(ctx: ServiceContext): PageEnv {
  return {
    async getSelf(request) {
      const sessionCookie = readCookie(request.headers.get("cookie"), SESSION_COOKIE);
      if (!sessionCookie) return null;
      const principal = await authenticate({ ctx, sessionCookie });
      return principal?.kind === "user" ? { email: principal.email, userId: principal.userId, isLoggedIn: true } : null;
    },
  };
}

function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
    try {
      return decodeURIComponent(value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
