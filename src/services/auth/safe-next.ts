/**
 * Where to go after sign-in. Only a same-origin absolute path is kept; anything that a browser could read
 * as another origin (`//host`, `/\host`, schemes, control characters, backslashes) falls back to the default.
 * The answer is the path as the browser will serialise it, checked again after dot segments are removed
 * (`/.//host` resolves to `//host`), so it is idempotent: safeNext(safeNext(x)) === safeNext(x).
 */
export const DEFAULT_NEXT = "/dashboard";

const MAX_NEXT_LENGTH = 2048;
const base = new URL("http://tapscope.invalid");

/** A path a browser reads as ours: one leading slash, and nothing it would strip or turn into one ('\', tabs, newlines). */
function isPlainPath(path: string): boolean {
  if (path.length > MAX_NEXT_LENGTH || !path.startsWith("/") || path.startsWith("//")) return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
  return !/[\\\u0000-\u001f\u007f\s]/.test(path);
}

export function safeNext(next: string | null | undefined): string {
  if (!next || !isPlainPath(next)) return DEFAULT_NEXT;
  let resolved: URL;
  try {
    resolved = new URL(next, base);
  } catch {
    return DEFAULT_NEXT;
  }
  if (resolved.origin !== base.origin) return DEFAULT_NEXT;
  const path = resolved.pathname + resolved.search + resolved.hash;
  return isPlainPath(path) ? path : DEFAULT_NEXT;
}
