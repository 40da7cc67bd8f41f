import { createHash } from "node:crypto";

/**
 * Secrets never leave the machine by default. `redact` replaces them with a marker, `hash` with a
 * short SHA-256 prefix (equal secrets stay correlatable, the value is not recoverable), `keep` keeps them.
 * Structure stays visible: the auth scheme, cookie names and cookie attributes are kept.
 */
export type RedactMode = "redact" | "hash" | "keep";

export const REDACTED = "[redacted]";

const sensitiveHeaders = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
  "api-key",
  "apikey",
  "x-auth-token",
  "x-access-token",
  "x-refresh-token",
  "x-csrf-token",
  "x-xsrf-token",
  "x-amz-security-token",
  "x-goog-api-key",
  "x-session-token",
  "x-upstream-authorization",
  "private-token",
  "x-vault-token",
  "x-gitlab-token",
  "x-hub-signature",
  "x-hub-signature-256",
  "x-slack-signature",
  "stripe-signature",
  "x-tapscope-token",
]);

/** Header names that look like they carry a credential even if not in the list. */
const sensitiveHeaderPattern = /(^|-)(token|secret|password|passwd|api-?key|auth|credential|session|signature)($|-)/i;

const sensitiveParams = new Set([
  "token",
  "access_token",
  "refresh_token",
  "id_token",
  "auth",
  "auth_token",
  "api_key",
  "apikey",
  "api-key",
  "key",
  "secret",
  "client_secret",
  "password",
  "passwd",
  "pwd",
  "sig",
  "signature",
  "code",
  "session",
  "sessionid",
  "session_id",
  "jwt",
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "x-goog-signature",
  "x-goog-credential",
]);

const sensitiveParamPattern = /(token|secret|password|passwd|api_?key|signature|credential)/i;

// Names repeat on every request: the answer is remembered (bounded) instead of matched each time.
const headerVerdicts = new Map<string, boolean>();
const paramVerdicts = new Map<string, boolean>();

function remember(cache: Map<string, boolean>, name: string, decide: (lower: string) => boolean): boolean {
  let verdict = cache.get(name);
  if (verdict === undefined) {
    verdict = decide(name.toLowerCase());
    if (cache.size < 4096) cache.set(name, verdict);
  }
  return verdict;
}

export function isSensitiveHeader(name: string): boolean {
  return remember(headerVerdicts, name, (lower) => sensitiveHeaders.has(lower) || sensitiveHeaderPattern.test(lower));
}

export function isSensitiveParam(name: string): boolean {
  return remember(paramVerdicts, name, (lower) => sensitiveParams.has(lower) || sensitiveParamPattern.test(lower));
}

export function maskSecret(value: string, mode: RedactMode): string {
  if (mode === "keep" || value === "") return value;
  if (mode === "hash") return `sha256:${createHash("sha256").update(value).digest("hex").slice(0, 16)}`;
  return REDACTED;
}

export function redactHeaderValue(name: string, value: string, mode: RedactMode): string {
  if (mode === "keep") return value;
  const lower = name.toLowerCase();
  if (lower === "cookie") return redactCookiePairs(value, "; ", mode);
  if (lower === "set-cookie") return redactSetCookie(value, mode);
  if (lower === "authorization" || lower === "proxy-authorization") {
    // Keep the scheme ("Bearer", "Basic"): it tells what kind of credential was used.
    const space = value.indexOf(" ");
    if (space > 0 && space < 20) return `${value.slice(0, space)} ${maskSecret(value.slice(space + 1).trim(), mode)}`;
    return maskSecret(value, mode);
  }
  return maskSecret(value, mode);
}

/** The same array when nothing is sensitive (most requests): no copy per request. */
export function redactHeaders(headers: Array<[string, string]>, mode: RedactMode): Array<[string, string]> {
  if (mode === "keep") return headers;
  let out: Array<[string, string]> | null = null;
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i]!;
    if (!isSensitiveHeader(name)) continue;
    out ??= headers.slice();
    out[i] = [name, redactHeaderValue(name, value, mode)];
  }
  return out ?? headers;
}

function redactCookiePairs(value: string, joiner: string, mode: RedactMode): string {
  return value
    .split(";")
    .map((pair) => {
      const p = pair.trim();
      const eq = p.indexOf("=");
      if (eq <= 0) return p;
      return `${p.slice(0, eq)}=${maskSecret(p.slice(eq + 1), mode)}`;
    })
    .join(joiner);
}

function redactSetCookie(value: string, mode: RedactMode): string {
  // Only the first pair is the cookie; the rest are attributes (Path, Expires...).
  const semi = value.indexOf(";");
  const pair = semi === -1 ? value : value.slice(0, semi);
  const rest = semi === -1 ? "" : value.slice(semi);
  const eq = pair.indexOf("=");
  if (eq <= 0) return maskSecret(pair, mode) + rest;
  return `${pair.slice(0, eq)}=${maskSecret(pair.slice(eq + 1), mode)}${rest}`;
}

/** Cheap pre-check without allocating per parameter: most queries have nothing to redact. */
function hasSensitiveParam(query: string): boolean {
  let start = 0;
  while (start < query.length) {
    let end = query.indexOf("&", start);
    if (end === -1) end = query.length;
    const eq = query.indexOf("=", start);
    const nameEnd = eq === -1 || eq > end ? end : eq;
    if (nameEnd > start) {
      const raw = query.slice(start, nameEnd);
      // Encoded names are rare; decode them to be sure rather than miss one.
      const name = raw.includes("%") || raw.includes("+") ? safeDecode(raw) : raw;
      if (isSensitiveParam(name)) return true;
    }
    start = end + 1;
  }
  return false;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    return s;
  }
}

/** Redacts token-like query parameters of a request target, keeping everything else byte for byte. */
export function redactTarget(target: string, mode: RedactMode): string {
  if (mode === "keep") return target;
  const q = target.indexOf("?");
  if (q === -1) return target;
  const hashAt = target.indexOf("#", q);
  const query = hashAt === -1 ? target.slice(q + 1) : target.slice(q + 1, hashAt);
  const redacted = redactQuery(query, mode);
  if (redacted === query) return target;
  return target.slice(0, q + 1) + redacted + (hashAt === -1 ? "" : target.slice(hashAt));
}

/** `a=1&token=x` -> `a=1&token=%5Bredacted%5D` (form bodies use the same rule). */
export function redactQuery(query: string, mode: RedactMode): string {
  if (mode === "keep" || query === "" || !hasSensitiveParam(query)) return query;
  let changed = false;
  const parts = query.split("&").map((part) => {
    const eq = part.indexOf("=");
    if (eq <= 0) return part;
    let name: string;
    try {
      name = decodeURIComponent(part.slice(0, eq).replaceAll("+", " "));
    } catch {
      name = part.slice(0, eq);
    }
    if (!isSensitiveParam(name) || eq === part.length - 1) return part;
    changed = true;
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1).replaceAll("+", " "));
    } catch {
      value = part.slice(eq + 1);
    }
    return `${part.slice(0, eq)}=${encodeURIComponent(maskSecret(value, mode))}`;
  });
  return changed ? parts.join("&") : query;
}

/** JSON keys are matched more narrowly than query names: {"code": "NOT_FOUND"} or {"key": "id"} are ordinary data. */
const jsonVerdicts = new Map<string, boolean>();
const jsonSensitivePattern = /(token|secret|password|passwd|api_?key|apikey|credential|authorization|private_?key)/i;

/** Descriptions of a credential rather than the credential: token_type, password_expires_at, api_key_id. */
const jsonMetadataSuffix = /(type|kind|_?ids?|_?url|_?uri|_?endpoint|expires?(_in|_at)?|_?count|_?length|_?hint|_?name)$/i;

export function isSensitiveJsonKey(name: string): boolean {
  return remember(jsonVerdicts, name, (lower) => jsonSensitivePattern.test(lower) && !jsonMetadataSuffix.test(lower));
}

// A JSON member with a string value; linear (no nested quantifiers over the same characters).
const jsonStringMember = /"((?:[^"\\]|\\.){1,128})"(\s*:\s*)"((?:[^"\\]|\\.)*)"/g;

/**
 * Redacts string values of credential-looking keys in JSON text ({"password": "..."}, an OAuth token
 * response's "access_token"), keeping the rest byte for byte. Works on a truncated sample too.
 */
export function redactJsonText(text: string, mode: RedactMode): string {
  if (mode === "keep") return text;
  return text.replace(jsonStringMember, (whole, key: string, colon: string, value: string) =>
    isSensitiveJsonKey(key) && value !== "" ? `"${key}"${colon}"${maskSecret(value, mode)}"` : whole,
  );
}
