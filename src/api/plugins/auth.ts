import { Elysia } from "elysia";
import { parseCookies } from "~/lib/cookies.ts";
import { AppError } from "~/lib/errors.ts";
import type { CallerKind } from "~/lib/protocol/api/callers.ts";
import type { Config } from "~/lib/server/env.ts";
import { admitCaller, type Credential } from "~/services/auth/admit-caller.ts";
import { authenticate } from "~/services/auth/authenticate.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Who may reach the routes a plugin guards: their declaration (lib/protocol/api/calls.ts, src/api/routes.ts). */
type RouteAccess<K extends CallerKind> = {
  callers: readonly K[];
  /** The call's or route's name, for a refusal's text. */
  what: string;
  /** Only our own pages may call it, with a session or without (a sign-in is a write). */
  isSameOriginOnly?: boolean;
};

/**
 * Guards the routes after it in the instance that uses it: cookie-authenticated writes are refused unless they come
 * from our Origin with a JSON body (CSRF), then the caller is admitted by the declaration (admitCaller: 401 or 403),
 * both before the body is validated. Handlers get `principal`, of the declared kinds.
 * One declaration per instance: `new Elysia().use(authPlugin(ctx, access)).get(...)`; a JSON call uses apiCall.
 */
export function authPlugin<const K extends CallerKind>(ctx: ServiceContext, access: RouteAccess<K>) {
  return new Elysia()
    .onTransform({ as: "scoped" }, ({ request }) => {
      if (access.isSameOriginOnly && !isAllowedOrigin(request, ctx.config)) throw crossSite();
      if (isSafeMethod(request.method) || request.headers.has("authorization")) return;
      if (sessionCookieFromRequest(request)) assertNotCrossSite(request, ctx.config);
    })
    .derive({ as: "scoped" }, async ({ request, set }) => {
      // Answers depend on who asks (and carry secrets such as new tokens): never cache them.
      set.headers["cache-control"] = "no-store";
      const credential = await credentialFromRequest({ ctx, request });
      return { principal: admitCaller({ callers: access.callers, credential, what: access.what }) };
    });
}

/** What a Request presents: `Authorization: Bearer` first (never falling back to the cookie), else the session cookie. */
export async function credentialFromRequest({ ctx, request }: { ctx: ServiceContext; request: Request }): Promise<Credential> {
  const authorization = request.headers.get("authorization") ?? undefined;
  const principal = await authenticate({ ctx, sessionCookie: sessionCookieFromRequest(request), authorization });
  return { principal, hasInvalidToken: authorization !== undefined && principal === null };
}

/**
 * For WebSocket upgrades: like credentialFromRequest, but a cookie session only counts when the Origin is ours
 * (browsers always send Origin on WebSocket handshakes; this stops cross-site WebSocket hijacking).
 */
export async function credentialFromUpgrade({ ctx, request }: { ctx: ServiceContext; request: Request }): Promise<Credential> {
  const credential = await credentialFromRequest({ ctx, request });
  if (credential.principal?.kind === "user" && !isAllowedOrigin(request, ctx.config)) return { principal: null, hasInvalidToken: false };
  return credential;
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

function crossSite(): AppError {
  return new AppError("FORBIDDEN", "forbidden: cross-site request refused");
}

function assertNotCrossSite(request: Request, config: Config): void {
  if (!isAllowedOrigin(request, config)) throw crossSite();
  // Cross-site pages can only send form, text/plain or untyped bodies without a preflight: accept JSON alone.
  const contentType = request.headers.get("content-type");
  const hasBody = request.headers.has("transfer-encoding") || Number(request.headers.get("content-length") ?? "0") > 0;
  const isJson = contentType !== null && /^application\/json\s*(;|$)/i.test(contentType);
  if ((contentType !== null || hasBody) && !isJson) {
    throw new AppError("FORBIDDEN", "forbidden: requests with a body must be application/json");
  }
}
