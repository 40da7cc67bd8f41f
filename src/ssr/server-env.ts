import { parseCookies } from "~/lib/cookies.ts";
import { authenticate } from "~/services/auth/authenticate.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { PageEnv } from "~/ui/env.ts";

/** Loaders' server side: the session is checked with the auth service, never by calling our own HTTP API. */
export function createServerEnv(ctx: ServiceContext): PageEnv {
  return {
    async getSelf(request) {
      const sessionCookie = parseCookies(request.headers.get("cookie"))[SESSION_COOKIE];
      if (!sessionCookie) return null;
      const principal = await authenticate({ ctx, sessionCookie });
      return principal?.kind === "user" ? { email: principal.email, userId: principal.userId, isLoggedIn: true } : null;
    },
  };
}
