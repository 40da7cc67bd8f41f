/**
 * Why a sign-in failed, as a code in `/login?error=<code>`. The sign-in page shows only these messages,
 * never text from its URL: anyone can send a link to our real sign-in page with words of their choosing.
 */
export const loginErrorMessages = {
  link_invalid: "This sign-in link is invalid, used or expired. Enter your email to get a new one.",
  cancelled: "Sign-in was cancelled.",
  attempt_expired: "The sign-in attempt expired or did not start here. Try again.",
  no_verified_email: "Your account has no verified email address. Verify it with the provider, or sign in with your email.",
  provider_failed: "Sign-in with the provider failed. Try again, or sign in with your email.",
  provider_unavailable: "That sign-in provider is not set up on this server. Sign in with your email.",
} as const;

export type LoginErrorCode = keyof typeof loginErrorMessages;

const GENERIC = "Sign-in failed. Try again.";

/** The message for a `?error=` value: our own text for a known code, a generic one otherwise, null when absent. */
export function loginErrorMessage(code: string | null | undefined): string | null {
  if (!code) return null;
  return Object.hasOwn(loginErrorMessages, code) ? loginErrorMessages[code as LoginErrorCode] : GENERIC;
}
