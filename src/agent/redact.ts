import { createHash } from "node:crypto";

/**
 * Secrets never leave the machine by default. `redact` replaces them with a marker, `hash` with a
 * short SHA-256 prefix (equal secrets stay correlatable, the value is not recoverable), `keep` keeps them.
 * Structure stays visible: the auth scheme, cookie names and cookie attributes are kept.
 *
 * One name rule decides for header names, query parameters, form fields, multipart parts (by their
 * Content-Disposition name), JSON keys (escapes decoded) and the program's command line (`--flag=value`,
 * `--flag value`, `KEY=value`). A name is split into words (on punctuation and camelCase: "X-RapidAPI-Key" is
 * x, rapid, api, key) and is secret when (docs/adr/0014-redaction-rules.md):
 * - joined, it contains password, passwd, passphrase, secret, token, credential, apikey, privatekey, signature,
 *   cookie, session, jwt or bearer; or
 * - a word is key, pass, pwd, pin, sig, otp, csrf, xsrf or hmac, or begins with "auth" (auth, authorization,
 *   authentication; not author or authority);
 * - except names that only describe or accompany a credential: Sec-WebSocket-Key/-Accept, WWW-Authenticate,
 *   Proxy-Authenticate, :authority, Idempotency-Key, Keep-Alive.
 * Query parameters and form fields also treat `code` (OAuth) as secret. JSON is narrower where data often
 * looks like a credential's name: a bare "key" or "code" is data, and names ending in type, kind, id, url,
 * expires(_in/_at), count, length, hint or name describe a credential rather than hold it.
 */
export type RedactMode = "redact" | "hash" | "keep";

export const REDACTED = "[redacted]";

const secretParts = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "credential",
  "apikey",
  "privatekey",
  "signature",
  "cookie",
  "session",
  "jwt",
  "bearer",
];
const secretWords = new Set(["key", "pass", "pwd", "pin", "sig", "otp", "csrf", "xsrf", "hmac"]);
const harmlessNames = new Set([
  "sec-websocket-key",
  "sec-websocket-accept",
  "www-authenticate",
  "proxy-authenticate",
  ":authority",
  "authority",
  "idempotency-key",
  "keep-alive",
]);
/** Descriptions of a credential rather than the credential: token_type, password_expires_at, api_key_id. */
const metadataSuffix = /(type|kind|_?ids?|_?url|_?uri|_?endpoint|expires?(_in|_at)?|_?count|_?length|_?hint|_?name)$/i;

/** "X-RapidAPI-Key" -> ["x", "rapid", "api", "key"]; "clientSecret" -> ["client", "secret"]. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

function isSecretName(name: string): boolean {
  if (harmlessNames.has(name.toLowerCase())) return false;
  const parts = words(name);
  const joined = parts.join("");
  for (const part of secretParts) if (joined.includes(part)) return true;
  for (const word of parts) {
    if (secretWords.has(word)) return true;
    if (word.startsWith("auth") && !(word.startsWith("author") && !word.startsWith("authoriz"))) return true;
  }
  return false;
}

// Names repeat on every request: the answer is remembered (bounded) instead of matched each time.
const headerVerdicts = new Map<string, boolean>();
const paramVerdicts = new Map<string, boolean>();
const jsonVerdicts = new Map<string, boolean>();

function remember(cache: Map<string, boolean>, name: string, decide: (name: string) => boolean): boolean {
  let verdict = cache.get(name);
  if (verdict === undefined) {
    verdict = decide(name);
    if (cache.size < 4096) cache.set(name, verdict);
  }
  return verdict;
}

export function isSensitiveHeader(name: string): boolean {
  return remember(headerVerdicts, name, isSecretName);
}

/** Query parameters, form fields, multipart parts and command-line flags. */
export function isSensitiveParam(name: string): boolean {
  return remember(paramVerdicts, name, (n) => isSecretName(n) || n.toLowerCase() === "code");
}

/**
 * Whether any name in `text` could be a secret one: false when no part or word a secret name needs appears in it, its
 * separators left out (as a name's words are joined), so a statement that names nothing secret skips the name-by-name
 * look.
 */
export function mayNameSecret(text: string): boolean {
  const joined = text.toLowerCase().replace(/[^a-z0-9]+/g, "");
  if (joined.includes("auth")) return true;
  for (const part of secretParts) if (joined.includes(part)) return true;
  for (const word of secretWords) if (joined.includes(word)) return true;
  return false;
}

export function isSensitiveJsonKey(name: string): boolean {
  return remember(jsonVerdicts, name, (n) => {
    const lower = n.toLowerCase();
    return lower !== "key" && !metadataSuffix.test(n) && isSecretName(n);
  });
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
  if (lower === "authorization" || lower === "proxy-authorization" || lower === "authentication") {
    // Keep the scheme ("Bearer", "Basic"): it tells what kind of credential was used.
    const space = value.indexOf(" ");
    if (space > 0 && space < 20) return `${value.slice(0, space)} ${maskSecret(value.slice(space + 1).trim(), mode)}`;
    return maskSecret(value, mode);
  }
  return maskSecret(value, mode);
}

/** Headers whose value is a URL: its query is redacted like a request's (an OAuth redirect carries ?code=...). */
const urlHeaders = new Set(["location", "content-location", "referer", "trailer:location"]);

const HEADER_PLAIN = 0;
const HEADER_SECRET = 1;
const HEADER_URL = 2;
/** What each header name needs, remembered (bounded): one lookup per header, no lower-cased copy of its name. */
const headerHandling = new Map<string, number>();

function handlingOf(name: string): number {
  let handling = headerHandling.get(name);
  if (handling === undefined) {
    handling = isSensitiveHeader(name) ? HEADER_SECRET : urlHeaders.has(name.toLowerCase()) ? HEADER_URL : HEADER_PLAIN;
    if (headerHandling.size < 4096) headerHandling.set(name, handling);
  }
  return handling;
}

/** One header's value as it may leave the machine: the same string when nothing in it is secret. */
export function redactHeader(name: string, value: string, mode: RedactMode): string {
  if (mode === "keep") return value;
  const handling = handlingOf(name);
  if (handling === HEADER_PLAIN) return value;
  return handling === HEADER_SECRET ? redactHeaderValue(name, value, mode) : redactTarget(value, mode);
}

/** The same array when nothing is sensitive (most requests): no copy per request. */
export function redactHeaders(headers: Array<[string, string]>, mode: RedactMode): Array<[string, string]> {
  if (mode === "keep") return headers;
  let out: Array<[string, string]> | null = null;
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i]!;
    const redacted = redactHeader(name, value, mode);
    if (redacted === value) continue;
    out ??= headers.slice();
    out[i] = [name, redacted];
  }
  return out ?? headers;
}

/**
 * What long header values became (cut and redacted), by value. HTTP/2 sends a header repeated on every request as
 * a reference to one decoded string, so with this a large value costs its redaction once, not once per request
 * (looking a string up hashes it once; the engine keeps the hash with the string). Bounded: cleared when full.
 */
export class HeaderValueMemo {
  private readonly byValue = new Map<string, { name: string; kept: string }>();

  constructor(
    /** Shorter values are cheaper to redact than to look up. */
    readonly minLength = 1024,
    private readonly maxEntries = 256,
  ) {}

  /** What `value` under `name` became, or undefined. */
  get(name: string, value: string): string | undefined {
    const found = this.byValue.get(value);
    return found && found.name === name ? found.kept : undefined;
  }

  set(name: string, value: string, kept: string): string {
    if (this.byValue.size >= this.maxEntries) this.byValue.clear();
    this.byValue.set(value, { name, kept });
    return kept;
  }
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

/** Reads a JSON string starting at the quote at `at`; returns the index after its closing quote, or -1 if cut short. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return -1;
}

function skipSpace(text: string, at: number): number {
  while (at < text.length) {
    const c = text.charCodeAt(at);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    at++;
  }
  return at;
}

/** A key as the program meant it: "pass\u0077ord" is password. */
function decodeJsonKey(raw: string): string {
  if (!raw.includes("\\")) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

const jsonNumber = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Redacts the string and number values of credential-looking keys in JSON text ({"password": "..."}, {"pin":
 * 1234}, an OAuth token response's "access_token"), keeping the rest byte for byte. A single linear pass that
 * tells keys from values by the colon after a string, so text inside strings is never taken for a key; it
 * tolerates a truncated sample and text that is not quite JSON (it never throws, it redacts what it recognises).
 */
export function redactJsonText(text: string, mode: RedactMode): string {
  if (mode === "keep") return text;
  let out = "";
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const quote = text.indexOf('"', i);
    if (quote === -1) break;
    const keyEnd = stringEnd(text, quote);
    if (keyEnd === -1) break;
    const colon = skipSpace(text, keyEnd);
    if (text.charCodeAt(colon) !== 0x3a) {
      i = keyEnd;
      continue;
    }
    const valueAt = skipSpace(text, colon + 1);
    const key = text.slice(quote + 1, keyEnd - 1);
    if (key.length > 256 || !isSensitiveJsonKey(decodeJsonKey(key))) {
      i = valueAt;
      continue;
    }
    let valueEnd = -1;
    let value = "";
    if (text.charCodeAt(valueAt) === 0x22) {
      valueEnd = stringEnd(text, valueAt);
      if (valueEnd === -1) valueEnd = text.length;
      value = text.slice(valueAt + 1, Math.max(valueAt + 1, valueEnd - 1));
    } else {
      jsonNumber.lastIndex = valueAt;
      const number = jsonNumber.exec(text);
      if (number) {
        valueEnd = valueAt + number[0].length;
        value = number[0];
      }
    }
    if (valueEnd === -1 || value === "") {
      i = valueAt;
      continue;
    }
    out += `${text.slice(copied, valueAt)}"${maskSecret(value, mode)}"`;
    copied = i = valueEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** The boundary parameter of a multipart Content-Type, or "" if there is none. */
export function multipartBoundary(contentType: string): string {
  const match = /;\s*boundary=(?:"([^"]{1,200})"|([^\s;]{1,200}))/i.exec(contentType);
  return match ? (match[1] ?? match[2] ?? "") : "";
}

/**
 * Redacts the content of multipart/form-data parts whose Content-Disposition name is secret-looking (a form's
 * password field, an uploaded "private_key"), keeping every boundary and part header. `text` is the body read
 * as latin1 (one char per byte), so byte offsets survive. A truncated last part is redacted to the end.
 */
export function redactMultipart(text: string, boundary: string, mode: RedactMode): string {
  if (mode === "keep" || boundary === "") return text;
  const delimiter = `--${boundary}`;
  let out = "";
  let copied = 0;
  let at = text.indexOf(delimiter);
  while (at !== -1) {
    const headersAt = at + delimiter.length;
    const headersEnd = text.indexOf("\r\n\r\n", headersAt);
    if (headersEnd === -1) break;
    const contentAt = headersEnd + 4;
    let next = text.indexOf(`\r\n${delimiter}`, contentAt);
    const contentEnd = next === -1 ? text.length : next;
    const name = /content-disposition:[^\r\n]*?;\s*name="([^"\r\n]{0,256})"/i.exec(text.slice(headersAt, headersEnd))?.[1];
    if (name !== undefined && contentEnd > contentAt && isSensitiveParam(name)) {
      out += text.slice(copied, contentAt) + maskSecret(text.slice(contentAt, contentEnd), mode);
      copied = contentEnd;
    }
    if (next === -1) break;
    next += 2;
    at = next;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** `scheme://user:password@host`: the password part. */
const urlUserinfo = /([a-z][a-z0-9+.-]{0,30}:\/\/[^:/@\s]{0,256}:)([^@/\s]{1,1024})(@)/gi;

function redactArgValue(value: string, mode: RedactMode): string {
  return value.replace(urlUserinfo, (_all, before: string, secret: string, at: string) => `${before}${maskSecret(secret, mode)}${at}`);
}

/**
 * The program's command line, argument by argument: `--db-password=...` and `--db-password ...`, `-p=...`,
 * env-like `API_KEY=...` (as `env API_KEY=... prog` passes them), and a URL's password
 * (`postgres://user:pw@host`). Flag names follow the query-parameter rule.
 */
export function redactCommandLine(args: string[], mode: RedactMode): string[] {
  if (mode === "keep") return args;
  const out = args.slice();
  for (let i = 0; i < out.length; i++) {
    const arg = out[i]!;
    const eq = arg.indexOf("=");
    if (arg.startsWith("-")) {
      const name = arg.slice(0, eq === -1 ? arg.length : eq).replace(/^-+/, "");
      if (!name || !isSensitiveParam(name)) out[i] = redactArgValue(arg, mode);
      else if (eq !== -1) out[i] = `${arg.slice(0, eq + 1)}${maskSecret(arg.slice(eq + 1), mode)}`;
      else if (i + 1 < out.length && !out[i + 1]!.startsWith("-")) {
        out[i + 1] = maskSecret(out[i + 1]!, mode);
        i++;
      }
    } else if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(arg.slice(0, eq)) && isSensitiveParam(arg.slice(0, eq))) {
      out[i] = `${arg.slice(0, eq + 1)}${maskSecret(arg.slice(eq + 1), mode)}`;
    } else out[i] = redactArgValue(arg, mode);
  }
  return out;
}
