import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/**
 * A collector's headers (API keys) at rest: AES-256-GCM under a key derived from SESSION_SECRET (HKDF-SHA256), so a copy
 * of the database alone does not give them away. Stored as base64 of iv (12 bytes) | tag (16) | ciphertext.
 */
function keyOf(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "tapscope", "otlp collector headers v1", 32));
}

export function sealHeaders(secret: string, headers: Array<[string, string]>): string {
  if (headers.length === 0) return "";
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(headers), "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

/** The headers, or null when they cannot be read (SESSION_SECRET changed since they were saved, or the row was altered). */
export function openHeaders(secret: string, sealed: string): Array<[string, string]> | null {
  if (!sealed) return [];
  try {
    const bytes = Buffer.from(sealed, "base64");
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret), bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    const text = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8");
    const parsed = JSON.parse(text) as unknown;
    if (!Array.isArray(parsed)) return null;
    return parsed.filter((h): h is [string, string] => Array.isArray(h) && typeof h[0] === "string" && typeof h[1] === "string");
  } catch {
    return null;
  }
}
