/**
 * Where to go after sign-in. Only a same-origin absolute path is kept; anything that a browser could read
 * as another origin (`//host`, `/\host`, schemes, control characters, backslashes) falls back to the default.
 */
export const DEFAULT_NEXT = "/dashboard";

export function safeNext(next: string | null | undefined): string {
  if (!next || next.length > 2048) return DEFAULT_NEXT;
  if (!next.startsWith("/") || next.startsWith("//")) return DEFAULT_NEXT;
  // Browsers treat '\' as '/', and strip tabs and newlines before parsing, so refuse them all.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
  if (/[\\\u0000-\u001f\u007f\s]/.test(next)) return DEFAULT_NEXT;
  try {
    const base = new URL("http://tapscope.invalid");
    const resolved = new URL(next, base);
    if (resolved.origin !== base.origin) return DEFAULT_NEXT;
    return resolved.pathname + resolved.search + resolved.hash;
  } catch {
    return DEFAULT_NEXT;
  }
}
