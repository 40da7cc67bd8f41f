import { type Cookie, Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import { parseCookies } from "~/lib/cookies.ts";
import { AppError } from "~/lib/errors.ts";
import { safeEqual } from "~/lib/ids.ts";
import { log } from "~/lib/logger.ts";
import type { LoginErrorCode } from "~/lib/login-errors.ts";
import { EmailCallbackQuery, NextQuery, OAuthCallbackQuery, Self } from "~/lib/protocol/api/auth.ts";
import { consumeLoginLink } from "~/services/auth/consume-login-link.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { beginOAuth, finishOAuth, NO_VERIFIED_EMAIL, type OAuthProviderName } from "~/services/auth/oauth.ts";
import { requestLoginLink } from "~/services/auth/request-login-link.ts";
import { revokeSession } from "~/services/auth/revoke-session.ts";
import { DEFAULT_NEXT, safeNext } from "~/services/auth/safe-next.ts";
import { signIn } from "~/services/auth/sign-in.ts";
import type { ServiceContext } from "~/services/context.ts";
import { clearOAuthCookies, clearSessionCookie, OAUTH_COOKIES, setOAuthCookies, setSessionCookie } from "./cookies.ts";

type Set = { status?: number | string; headers: Record<string, string | number> };

function redirect(set: Set, location: string): string {
  set.status = 302;
  set.headers.location = location;
  set.headers["cache-control"] = "no-store";
  return "";
}

/** Failed sign-ins land back on /login with a reason code the page turns into its own words (and the original `next`). */
function loginError(set: Set, code: LoginErrorCode, next?: string | null): string {
  const params = new URLSearchParams({ error: code });
  if (next && next !== DEFAULT_NEXT && safeNext(next) === next) params.set("next", next);
  return redirect(set, `/login?${params}`);
}

async function startSession(ctx: ServiceContext, jar: Record<string, Cookie<unknown>>, email: string) {
  const user = await signIn({ ctx, email });
  const session = await createSession({ ctx, userId: user.userId });
  setSessionCookie(jar, ctx.config, session.token, session.expiresAt);
  return user;
}

/** GetSelf, EmailLogin (+ its link's callback), Google/GitHub OAuth, LogOut. */
export function authRoutes(ctx: ServiceContext) {
  const oauth = (provider: OAuthProviderName, redirectPath: string, callbackPath: string) =>
    new Elysia()
      .get(
        redirectPath,
        ({ query, cookie, set }) => {
          const { url, state, codeVerifier } = beginOAuth({ ctx, provider });
          setOAuthCookies(cookie, ctx.config, { state, verifier: codeVerifier, next: safeNext(query.next) });
          return redirect(set, url);
        },
        { query: NextQuery },
      )
      .get(
        callbackPath,
        async ({ query, request, cookie, set }) => {
          const jar = parseCookies(request.headers.get("cookie"));
          const expectedState = jar[OAUTH_COOKIES.state];
          const verifier = jar[OAUTH_COOKIES.verifier];
          const next = safeNext(jar[OAUTH_COOKIES.next]);
          clearOAuthCookies(cookie, ctx.config);
          if (query.error) return loginError(set, "cancelled", next);
          if (!query.code || !query.state || !expectedState || !verifier || !safeEqual(query.state, expectedState)) {
            log.info("oauth callback refused: state mismatch", { provider });
            return loginError(set, "attempt_expired", next);
          }
          try {
            const email = await finishOAuth({ ctx, provider, code: query.code, codeVerifier: verifier });
            await startSession(ctx, cookie, email);
          } catch (err) {
            if (!(err instanceof AppError) || err.status >= 500) throw err;
            log.info("oauth sign-in refused", { provider, reason: err.message });
            const code =
              err.code === "NOT_FOUND"
                ? "provider_unavailable"
                : err.message === NO_VERIFIED_EMAIL
                  ? "no_verified_email"
                  : "provider_failed";
            return loginError(set, code, next);
          }
          return redirect(set, next);
        },
        { query: OAuthCallbackQuery },
      );

  return new Elysia()
    .use(authPlugin(ctx))
    .get(
      "/api/GetSelf",
      ({ requireUser }) => {
        const user = requireUser();
        return { email: user.email, userId: user.userId, isLoggedIn: true as const };
      },
      { response: { 200: Self } },
    )
    .post(
      "/api/EmailLogin",
      async ({ body }) => {
        await requestLoginLink({ ctx, email: body.email, next: body.next });
        return {};
      },
      callSchemas("EmailLogin"),
    )
    .get(
      "/api/EmailLoginCallback",
      async ({ query, cookie, set }) => {
        if (!query.token) return loginError(set, "link_invalid");
        let link: Awaited<ReturnType<typeof consumeLoginLink>>;
        try {
          link = await consumeLoginLink({ ctx, secret: query.token });
        } catch (err) {
          if (err instanceof AppError && err.status < 500) return loginError(set, "link_invalid");
          throw err;
        }
        await startSession(ctx, cookie, link.email);
        return redirect(set, safeNext(link.next));
      },
      { query: EmailCallbackQuery },
    )
    .get("/api/LogOut", async ({ principal, cookie, set }) => {
      if (principal?.kind === "user") await revokeSession({ ctx, sessionId: principal.sessionId });
      clearSessionCookie(cookie, ctx.config);
      return redirect(set, "/login");
    })
    .use(oauth("google", "/api/GoogleRedirect", "/api/GoogleCallback"))
    .use(oauth("github", "/api/GithubRedirect", "/api/GithubCallback"));
}
