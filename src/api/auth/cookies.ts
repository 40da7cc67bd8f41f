import type { Cookie } from "elysia";
import type { Config } from "~/lib/server/env.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";

type Jar = Record<string, Cookie<unknown>>;

/** Short-lived cookies that carry one OAuth round trip (state, PKCE verifier, where to go after). */
export const OAUTH_COOKIES = {
  state: "tapscope_oauth_state",
  verifier: "tapscope_oauth_verifier",
  next: "tapscope_oauth_next",
} as const;
const OAUTH_TTL_S = 10 * 60;

/**
 * The browser that asked for a sign-in link: a random secret whose SHA-256 is stored with the link, so opening the
 * link in this browser signs in at once and anywhere else asks first. Only the API reads it.
 */
export const LOGIN_BROWSER_COOKIE = "tapscope_login_browser";
const LOGIN_BROWSER_SECRET = /^[A-Za-z0-9_-]{43}$/;

/** This browser's sign-in secret from its cookie, when it holds a well-formed one. */
export function loginBrowserSecret(cookies: Record<string, string>): string | undefined {
  const value = cookies[LOGIN_BROWSER_COOKIE];
  return value && LOGIN_BROWSER_SECRET.test(value) ? value : undefined;
}

export function setLoginBrowserCookie(jar: Jar, config: Config, secret: string, maxAgeS: number): void {
  jar[LOGIN_BROWSER_COOKIE]?.set({
    value: secret,
    httpOnly: true,
    sameSite: "lax",
    secure: isSecure(config),
    path: "/api",
    maxAge: maxAgeS,
  });
}

function isSecure(config: Config): boolean {
  return config.publicUrl.startsWith("https:");
}

export function setSessionCookie(jar: Jar, config: Config, token: string, expiresAt: Date): void {
  jar[SESSION_COOKIE]?.set({
    value: token,
    httpOnly: true,
    sameSite: "lax",
    secure: isSecure(config),
    path: "/",
    expires: expiresAt,
  });
}

export function clearSessionCookie(jar: Jar, config: Config): void {
  jar[SESSION_COOKIE]?.set({
    value: "",
    httpOnly: true,
    sameSite: "lax",
    secure: isSecure(config),
    path: "/",
    maxAge: 0,
    expires: new Date(0),
  });
}

export function setOAuthCookies(jar: Jar, config: Config, values: { state: string; verifier: string; next: string }): void {
  for (const key of ["state", "verifier", "next"] as const) {
    jar[OAUTH_COOKIES[key]]?.set({
      value: values[key],
      httpOnly: true,
      sameSite: "lax",
      secure: isSecure(config),
      path: "/api",
      maxAge: OAUTH_TTL_S,
    });
  }
}

export function clearOAuthCookies(jar: Jar, config: Config): void {
  for (const name of Object.values(OAUTH_COOKIES)) {
    jar[name]?.set({ value: "", httpOnly: true, sameSite: "lax", secure: isSecure(config), path: "/api", maxAge: 0, expires: new Date(0) });
  }
}
