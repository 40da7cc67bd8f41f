import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** 128-bit random id, url-safe: trace ids, link ids. */
export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString("base64url");
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A UUID's text (any version, either case), for patterns that embed one. */
export const uuidSource = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const uuidPattern = new RegExp(`^${uuidSource}$`, "i");

export function isUuid(value: unknown): value is string {
  return typeof value === "string" && uuidPattern.test(value);
}
