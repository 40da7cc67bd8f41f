import { CodeChallengeMethod, generateCodeVerifier, generateState, OAuth2Client } from "arctic";
import { AppError } from "~/lib/errors.ts";
import type { OAuthProviderConfig } from "~/lib/server/env.ts";
import type { ServiceContext } from "~/services/context.ts";

export type OAuthProviderName = "google" | "github";

const scopes: Record<OAuthProviderName, string[]> = {
  google: ["openid", "email"],
  github: ["read:user", "user:email"],
};

const callbackPath: Record<OAuthProviderName, string> = {
  google: "/api/GoogleCallback",
  github: "/api/GithubCallback",
};

function providerConfig(ctx: ServiceContext, provider: OAuthProviderName): OAuthProviderConfig {
  const config = ctx.config[provider];
  if (!config) throw new AppError("NOT_FOUND", `${provider === "google" ? "Google" : "GitHub"} sign-in is not configured`);
  return config;
}

function client(ctx: ServiceContext, provider: OAuthProviderName, config: OAuthProviderConfig): OAuth2Client {
  return new OAuth2Client(config.clientId, config.clientSecret, ctx.config.publicUrl + callbackPath[provider]);
}

/** The provider's authorize URL with a fresh state and PKCE (S256) verifier, which the caller keeps in cookies. */
export function beginOAuth({ ctx, provider }: { ctx: ServiceContext; provider: OAuthProviderName }): {
  url: string;
  state: string;
  codeVerifier: string;
} {
  const config = providerConfig(ctx, provider);
  const state = generateState();
  const codeVerifier = generateCodeVerifier();
  const url = client(ctx, provider, config).createAuthorizationURLWithPKCE(
    config.authorizeUrl,
    state,
    CodeChallengeMethod.S256,
    codeVerifier,
    scopes[provider],
  );
  if (provider === "google") url.searchParams.set("prompt", "select_account");
  return { url: url.toString(), state, codeVerifier };
}

/** Trades the code for an access token and returns the account's verified e-mail address. */
export async function finishOAuth({
  ctx,
  provider,
  code,
  codeVerifier,
}: {
  ctx: ServiceContext;
  provider: OAuthProviderName;
  code: string;
  codeVerifier: string;
}): Promise<string> {
  const config = providerConfig(ctx, provider);
  let accessToken: string;
  try {
    const tokens = await client(ctx, provider, config).validateAuthorizationCode(config.tokenUrl, code, codeVerifier);
    accessToken = tokens.accessToken();
  } catch {
    throw new AppError("UNAUTHORIZED", "sign-in failed: the provider refused the authorization code");
  }
  const email = provider === "google" ? await googleEmail(config, accessToken) : await githubEmail(config, accessToken);
  if (!email) throw new AppError("UNAUTHORIZED", NO_VERIFIED_EMAIL);
  return email;
}

export const NO_VERIFIED_EMAIL = "sign-in failed: the account has no verified e-mail address";

async function getJson(url: string, accessToken: string): Promise<unknown> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", "user-agent": "tapscope" },
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new AppError("UNAUTHORIZED", `sign-in failed: the provider answered ${res.status}`);
  return res.json();
}

async function googleEmail(config: OAuthProviderConfig, accessToken: string): Promise<string | null> {
  const info = (await getJson(config.userInfoUrl, accessToken)) as { email?: unknown; email_verified?: unknown };
  if (typeof info.email !== "string" || info.email_verified !== true) return null;
  return info.email;
}

async function githubEmail(config: OAuthProviderConfig, accessToken: string): Promise<string | null> {
  if (!config.emailsUrl) return null;
  const list = await getJson(config.emailsUrl, accessToken);
  if (!Array.isArray(list)) return null;
  const verified = list.filter(
    (e): e is { email: string; primary?: boolean } =>
      typeof e === "object" && e !== null && typeof e.email === "string" && e.verified === true,
  );
  return (verified.find((e) => e.primary) ?? verified[0])?.email ?? null;
}
