/**
 * Route templates: the path of a request with the segments that hold values (ids, UUIDs, hashes, tokens, dates,
 * e-mail addresses) replaced by placeholders, so requests to one endpoint group together (`/users/42/orders` and
 * `/users/7/orders` are both `/users/{id}/orders`). Judged by each segment's look alone; the server's ingest adds a
 * per-namespace guard for names (engines/routes) and an admin's explicit patterns (patterns.ts), which win.
 *
 * Written for the ingest path: one pass over each segment's characters, no regular expressions, no allocation beyond
 * the segments themselves.
 */

/** What a segment holding a value becomes. */
export const placeholders = {
  id: "{id}",
  uuid: "{uuid}",
  hex: "{hex}",
  token: "{token}",
  date: "{date}",
  email: "{email}",
  number: "{n}",
  /** A segment position the guard folded: too many distinct names at one place of the route. */
  name: "{name}",
  /** The segments past the most a route keeps. */
  rest: "{rest}",
} as const;

export const routeLimits = {
  /** Characters of a path looked at: past them the route ends with `{rest}`. */
  maxPathChars: 4096,
  /** Segments of a path kept in its route: more end it with `{rest}`. */
  maxSegments: 32,
  /** A segment longer than this is a value whatever it looks like. */
  maxNameChars: 64,
} as const;

/** The longest route a template can be: every segment at its limit, the slashes, and `/{rest}`. */
export const maxRouteChars = routeLimits.maxSegments * (routeLimits.maxNameChars + 1) + placeholders.rest.length + 1;

/**
 * The path part of what a request line carried: the query and fragment dropped, an absolute-form target
 * (`http://host/path`, a forward proxy's request) reduced to its path. Null for a target that is no path (CONNECT's
 * `host:port`, `*`).
 */
export function routePath(target: string): string | null {
  let start = 0;
  if (target.charCodeAt(0) !== 47 /* / */) {
    const scheme = target.indexOf("://");
    if (scheme <= 0 || scheme > 16) return null;
    const slash = target.indexOf("/", scheme + 3);
    if (slash < 0) return "/";
    start = slash;
  }
  let end = target.length;
  for (let i = start; i < end; i++) {
    const c = target.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) end = i;
  }
  return target.slice(start, Math.min(end, start + routeLimits.maxPathChars));
}

/**
 * The segments of a path (routePath's), and whether it was longer than a route keeps. A trailing slash is an empty
 * last segment, so `/users/` and `/users` stay apart as the program's router keeps them.
 */
export function pathSegments(path: string): { segments: string[]; isCut: boolean } {
  const segments = path.length <= 1 ? [] : path.slice(1).split("/", routeLimits.maxSegments + 1);
  const isCut = segments.length > routeLimits.maxSegments || path.length >= routeLimits.maxPathChars;
  if (segments.length > routeLimits.maxSegments) segments.length = routeLimits.maxSegments;
  return { segments, isCut };
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isLower = (c: number) => c >= 97 && c <= 122;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isHexLetter = (c: number) => (c >= 97 && c <= 102) || (c >= 65 && c <= 70);

function isUuid(s: string): boolean {
  if (s.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false;
    } else if (!isDigit(c) && !isHexLetter(c)) return false;
  }
  return true;
}

/** 2024-01-31, optionally followed by a time (`T10:00:00Z`, ` 10:00`). */
function isDate(s: string): boolean {
  if (s.length < 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return false;
  for (const i of [0, 1, 2, 3, 5, 6, 8, 9]) if (!isDigit(s.charCodeAt(i))) return false;
  const month = (s.charCodeAt(5) - 48) * 10 + (s.charCodeAt(6) - 48);
  const day = (s.charCodeAt(8) - 48) * 10 + (s.charCodeAt(9) - 48);
  if (month < 1 || month > 12 || day < 1 || day > 31) return false;
  if (s.length === 10) return true;
  const t = s.charCodeAt(10);
  return (t === 84 || t === 116 || t === 32 || t === 95) && s.length >= 13 && isDigit(s.charCodeAt(11)) && isDigit(s.charCodeAt(12));
}

/** local@domain.tld: one @ with text before it and a dot after it. */
function isEmail(s: string, at: number): boolean {
  if (at <= 0 || s.indexOf("@", at + 1) >= 0) return false;
  const dot = s.lastIndexOf(".");
  return dot > at + 1 && dot < s.length - 1;
}

/** Hyphen-separated lower-case words and numbers (`release-2024-01-notes`): a slug, a name the program chose. */
function isSlug(s: string): boolean {
  let hasHyphen = false;
  let part = 0; // 0 empty so far, 1 letters, 2 digits
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 45) {
      if (part === 0) return false;
      hasHyphen = true;
      part = 0;
    } else if (isLower(c)) {
      if (part === 2) return false;
      part = 1;
    } else if (isDigit(c)) {
      if (part === 1) return false;
      part = 2;
    } else return false;
  }
  return hasHyphen && part !== 0;
}

/**
 * What a segment's look says it holds: a placeholder, or null for a name (`users`, `v1`, `logo.png`,
 * `my-first-post`). Numbers are `{id}`, UUIDs `{uuid}`, hashes `{hex}`, random-looking tokens (base64, ULIDs,
 * `cus_J3x9ZkLm2PqR7t`) `{token}`, dates `{date}`, e-mail addresses `{email}`.
 */
export function classifySegment(raw: string): string | null {
  const s = raw.indexOf("%") >= 0 ? percentDecoded(raw) : raw;
  const n = s.length;
  if (n === 0) return null;
  if (n > routeLimits.maxNameChars) return placeholders.token;
  let digits = 0;
  let lower = 0;
  let upper = 0;
  let hexLetters = 0;
  let other = 0;
  let at = -1;
  let dots = 0;
  let minus = 0;
  let caseSwitches = 0;
  let lowerRun = 0;
  let maxLowerRun = 0;
  let letterRun = 0;
  let maxLetterRun = 0;
  let lastCase = 0; // 1 lower, 2 upper
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) {
      digits++;
      lowerRun = 0;
      letterRun = 0;
      continue;
    }
    const isLetterLower = isLower(c);
    if (isLetterLower || isUpper(c)) {
      if (isHexLetter(c)) hexLetters++;
      const kase = isLetterLower ? 1 : 2;
      if (lastCase !== 0 && kase !== lastCase) caseSwitches++;
      lastCase = kase;
      if (isLetterLower) {
        lower++;
        lowerRun++;
        if (lowerRun > maxLowerRun) maxLowerRun = lowerRun;
      } else {
        upper++;
        lowerRun = 0;
      }
      letterRun++;
      if (letterRun > maxLetterRun) maxLetterRun = letterRun;
      continue;
    }
    lowerRun = 0;
    letterRun = 0;
    if (c === 64) at = i;
    else if (c === 46) dots++;
    else if (c === 45) minus++;
    else if (c !== 95 && c !== 126 && c !== 43 && c !== 61) other++;
  }
  if (digits === n) return placeholders.id;
  if (isUuid(s)) return placeholders.uuid;
  if (at >= 0 && isEmail(s, at)) return placeholders.email;
  if (digits >= 8 && isDate(s)) return placeholders.date;
  const letters = lower + upper;
  if (letters === 0 && digits > 0 && dots + minus === n - digits && dots <= 1 && minus <= 1 && (minus === 0 || s.charCodeAt(0) === 45)) {
    return placeholders.number;
  }
  if (other > 0 || at >= 0 || dots > 0) return null;
  // Hashes: hex digits in one case, with letters and digits both (a word like "deadbeef" has no digit).
  if (
    n >= 8 &&
    minus === 0 &&
    hexLetters === letters &&
    letters > 0 &&
    digits > 0 &&
    (lower === 0 || upper === 0) &&
    n === digits + letters
  ) {
    return placeholders.hex;
  }
  if (n < 16 || isSlug(s)) return null;
  // Digits among letters (k3j9x8q2m1n4b7v6, ULIDs), without the long words of a name.
  if (digits * 4 >= n && letters > 0 && maxLetterRun <= 8) return placeholders.token;
  // Mixed case switching often, in short runs (base64): camelCase names switch once a word.
  if (upper * 5 >= letters && lower * 5 >= letters && maxLowerRun <= 4 && caseSwitches * 5 >= n) return placeholders.token;
  return null;
}

function percentDecoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * A file name's value parts: `app.3f2a9c1b.js` is `app.{hex}.js`, `12345.json` is `{id}.json`. Null when nothing in
 * it is a value (or it is no file name).
 */
export function templateFileName(segment: string): string | null {
  const dot = segment.lastIndexOf(".");
  if (dot <= 0 || dot === segment.length - 1 || segment.length - dot > 9) return null;
  for (let i = dot + 1; i < segment.length; i++) {
    const c = segment.charCodeAt(i);
    if (!isLower(c) && !isUpper(c) && !isDigit(c)) return null;
  }
  if (!isLower(segment.charCodeAt(dot + 1)) && !isUpper(segment.charCodeAt(dot + 1))) return null;
  const parts = segment.slice(0, dot).split(".");
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const placeholder = classifySegment(parts[i] as string);
    if (placeholder) {
      parts[i] = placeholder;
      changed = true;
    }
  }
  return changed ? `${parts.join(".")}${segment.slice(dot)}` : null;
}

/** A segment as its route shows it: its placeholder, its file name's, or itself (a name). */
export function templateSegment(segment: string): { text: string; isValue: boolean } {
  const placeholder = classifySegment(segment);
  if (placeholder) return { text: placeholder, isValue: true };
  const file = templateFileName(segment);
  if (file) return { text: file, isValue: true };
  return { text: segment, isValue: false };
}

/** The route of a request-line target by its segments' look alone (no guard, no patterns); "" for no path. */
export function templatePath(target: string): string {
  const path = routePath(target);
  if (path === null) return "";
  const { segments, isCut } = pathSegments(path);
  let route = "";
  for (const s of segments) route += `/${templateSegment(s).text}`;
  if (isCut) route += `/${placeholders.rest}`;
  return route || "/";
}
