import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/**
 * Secrets the server must read back to use (a webhook's signing secret: HMAC needs the secret itself, so it cannot be
 * hashed as tokens are), sealed with AES-256-GCM under a key derived from SESSION_SECRET. A database dump alone does
 * not give them away; changing SESSION_SECRET makes them unreadable (the rule's secret is then rotated).
 */

const version = "s1";

function keyOf(serverSecret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", serverSecret, "tapscope sealed secrets", purpose, 32));
}

export function seal(serverSecret: string, purpose: string, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(serverSecret, purpose), iv);
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `${version}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
}

/** The sealed text's secret, or null when it was sealed under another key or purpose, or is not sealed text. */
export function unseal(serverSecret: string, purpose: string, sealed: string): string | null {
  const [v, data] = sealed.split(".");
  if (v !== version || !data) return null;
  const bytes = Buffer.from(data, "base64url");
  if (bytes.length < 28) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(serverSecret, purpose), bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}
