/**
 * The pairs of a Cookie request header. The first of two same-named cookies wins (the browser sends the most
 * specific path first); a value in double quotes loses them; a value whose %-encoding is bad is kept raw, and
 * nothing here throws: the header is whatever a client chose to send.
 */
export function parseCookies(header: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || Object.hasOwn(out, name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    out[name] = decodeOrRaw(value);
  }
  return out;
}

function decodeOrRaw(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
