import { Elysia } from "elysia";
import { parseCookies } from "~/lib/cookies.ts";
import { AppError } from "~/lib/errors.ts";
import type { Config } from "~/lib/server/env.ts";
import { authenticate } from "~/services/auth/authenticate.ts";
import type { Principal, UserPrincipal } from "~/services/auth/principal.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * Gives controllers `ctx` (the service context), `principal` (nullable) and `requireUser()`.
 * Cookie-authenticated writes are guarded against CSRF here: the Origin must be ours and a body must be JSON.
 * Use it in each controller: `new Elysia().use(authPlugin(ctx)).post(...)`.
 */
export function authPlugin(ctx: ServiceContext) {
  return (
    new Elysia()
      .decorate("ctx", ctx)
      // Before body validation, so a cross-site form post is refused as such (403) rather than as a bad body.
      .onTransform({ as: "scoped" }, ({ request }) => {
        if (isSafeMethod(request.method) || request.headers.has("authorization")) return;
        if (sessionCookieFromRequest(request)) assertNotCrossSite(request, ctx.config);
      })
      .resolve({ as: "scoped" }, async ({ request, set }) => {
        // Answers depend on who asks (and carry secrets such as new tokens): never cache them.
        set.headers["cache-control"] = "no-store";
        const principal = await principalFromRequest({ ctx, request });
        return {
          principal,
          requireUser: (): UserPrincipal => {
            if (principal?.kind !== "user") throw new AppError("UNAUTHORIZED", "not signed in");
            return principal;
          },
        };
      })
  );
}

/** The caller of a Request: `Authorization: Bearer` first, else the session cookie. For HTTP and WebSocket upgrades. */
export function principalFromRequest({ ctx, request }: { ctx: ServiceContext; request: Request }): Promise<Principal | null> {
  return authenticate({
    ctx,
    sessionCookie: sessionCookieFromRequest(request),
    authorization: request.headers.get("authorization") ?? undefined,
  });
}

/**
 * For WebSocket upgrades: like principalFromRequest, but a cookie session only counts when the Origin is ours
 * (browsers always send Origin on WebSocket handshakes; this stops cross-site WebSocket hijacking).
 */
export async function principalFromUpgrade({ ctx, request }: { ctx: ServiceContext; request: Request }): Promise<Principal | null> {
  const principal = await principalFromRequest({ ctx, request });
  if (principal?.kind === "user" && !isAllowedOrigin(request, ctx.config)) return null;
  return principal;
}

export function sessionCookieFromRequest(request: Request): string | undefined {
  return parseCookies(request.headers.get("cookie"))[SESSION_COOKIE];
}

function isSafeMethod(method: string): boolean {
  return method === "GET" || method === "HEAD" || method === "OPTIONS";
}

export function isAllowedOrigin(request: Request, config: Pick<Config, "publicUrl">): boolean {
  const origin = request.headers.get("origin");
  if (!origin || origin === "null") return false;
  return origin === new URL(config.publicUrl).origin || origin === new URL(request.url).origin;
}

/**
 * Whether a GET that changes something (LogOut) comes from our own pages or the person's own hand (typed, bookmarked):
 * `Sec-Fetch-Site` says so in every current browser; without it, a Referer from elsewhere refuses, and a client that
 * sends neither (curl, an old browser with referrers off) is believed.
 */
export function isSameOriginNavigation(request: Request, config: Pick<Config, "publicUrl">): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin" || site === "none";
  const referer = request.headers.get("referer");
  if (!referer) return true;
  let origin: string;
  try {
    origin = new URL(referer).origin;
  } catch {
    return false;
  }
  return origin === new URL(config.publicUrl).origin || origin === new URL(request.url).origin;
}

function assertNotCrossSite(request: Request, config: Config): void {
  if (!isAllowedOrigin(request, config)) throw new AppError("FORBIDDEN", "forbidden: cross-site request refused");
  // Cross-site pages can only send form, text/plain or untyped bodies without a preflight: accept JSON alone.
  const contentType = request.headers.get("content-type");
  const hasBody = request.headers.has("transfer-encoding") || Number(request.headers.get("content-length") ?? "0") > 0;
  const isJson = contentType !== null && /^application\/json\s*(;|$)/i.test(contentType);
  if ((contentType !== null || hasBody) && !isJson) {
    throw new AppError("FORBIDDEN", "forbidden: requests with a body must be application/json");
  }
}
