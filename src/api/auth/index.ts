import { randomBytes } from "node:crypto";
import { type Cookie, Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import { authPlugin, isSameOriginNavigation } from "~/api/plugins/auth.ts";
import { routeAccess } from "~/api/routes.ts";
import { parseCookies } from "~/lib/cookies.ts";
import { AppError } from "~/lib/errors.ts";
import type { LoginErrorCode } from "~/lib/login-errors.ts";
import { EmailCallbackQuery, NextQuery, OAuthCallbackQuery, Self } from "~/lib/protocol/api/auth.ts";
import { safeEqual } from "~/lib/server/ids.ts";
import { log } from "~/lib/server/logger.ts";
import { consumeLoginLink } from "~/services/auth/consume-login-link.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { beginOAuth, finishOAuth, NO_VERIFIED_EMAIL, type OAuthProviderName } from "~/services/auth/oauth.ts";
import { LOGIN_LINK_PAGE, LOGIN_LINK_TTL_MS, requestLoginLink } from "~/services/auth/request-login-link.ts";
import { revokeSession } from "~/services/auth/revoke-session.ts";
import { DEFAULT_NEXT, safeNext } from "~/services/auth/safe-next.ts";
import { signIn } from "~/services/auth/sign-in.ts";
import type { ServiceContext } from "~/services/context.ts";
import {
  clearOAuthCookies,
  clearSessionCookie,
  loginBrowserSecret,
  OAUTH_COOKIES,
  setLoginBrowserCookie,
  setOAuthCookies,
  setSessionCookie,
} from "./cookies.ts";

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

/** GetSelf, EmailLogin (+ FinishEmailLogin, from the page its link opens), Google/GitHub OAuth, LogOut. */
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

  return (
    new Elysia()
      .use(
        new Elysia()
          .use(authPlugin(ctx, routeAccess("GET /api/GetSelf")))
          .get("/api/GetSelf", ({ principal }) => ({ email: principal.email, userId: principal.userId, isLoggedIn: true as const }), {
            response: { 200: Self },
          }),
      )
      .use(
        apiCall(ctx, "EmailLogin", async ({ body, request, cookie }) => {
          // One secret per browser, kept across its requests, so each of its links opens there without asking.
          const browserSecret = loginBrowserSecret(parseCookies(request.headers.get("cookie"))) ?? randomBytes(32).toString("base64url");
          const delivery = await requestLoginLink({ ctx, email: body.email, next: body.next, browserSecret });
          setLoginBrowserCookie(cookie, ctx.config, browserSecret, LOGIN_LINK_TTL_MS / 1000);
          return { delivery };
        }),
      )
      // Signing someone in is a write even without a session: the table lets only our own pages ask.
      .use(
        apiCall(ctx, "FinishEmailLogin", async ({ body, request, cookie }) => {
          const outcome = await consumeLoginLink({
            ctx,
            secret: body.token,
            browserSecret: loginBrowserSecret(parseCookies(request.headers.get("cookie"))),
            isConfirmed: body.confirm === true,
          });
          if (outcome.kind === "confirm") return { signedIn: false as const, email: outcome.email };
          await startSession(ctx, cookie, outcome.email);
          return { signedIn: true as const, next: safeNext(outcome.next) };
        }),
      )
      .use(
        new Elysia()
          .use(authPlugin(ctx, routeAccess("GET /api/LogOut")))
          .get("/api/LogOut", async ({ principal, request, cookie, set }) => {
            // A link or form on another site must not sign people out; they stay where they were.
            if (!isSameOriginNavigation(request, ctx.config)) return redirect(set, "/dashboard");
            if (principal?.kind === "user") await revokeSession({ ctx, sessionId: principal.sessionId });
            clearSessionCookie(cookie, ctx.config);
            return redirect(set, "/login");
          }),
      )
      // Forwards to the link's page, spending nothing: opening a link (or a scanner fetching it) never signs in.
      .get(
        "/api/EmailLoginCallback",
        ({ query, set }) => {
          if (!query.token) return loginError(set, "link_invalid");
          return redirect(set, `${LOGIN_LINK_PAGE}?token=${encodeURIComponent(query.token)}`);
        },
        { query: EmailCallbackQuery },
      )
      .use(oauth("google", "/api/GoogleRedirect", "/api/GoogleCallback"))
      .use(oauth("github", "/api/GithubRedirect", "/api/GithubCallback"))
  );
}
