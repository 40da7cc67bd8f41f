/**
 * Saved filter suggestions, kept per namespace in localStorage: the 100 most
 * recently used are kept, at most 7 are shown. Built-in suggestions are always offered and never stored.
 */
export type SuggestionKind = "method" | "status" | "url" | "duration";

export type FilterSuggestion = {
  text: string;
  kinds: SuggestionKind[];
  useCount: number;
  /** Milliseconds since the epoch. */
  lastUsed: number;
  builtIn: boolean;
};

export const MAX_SHOWN = 7;
export const MAX_KEPT = 100;

export const suggestionsKey = (namespaceId: string) => `tapscope:filterSuggestions:${namespaceId}`;

export const builtInSuggestions: FilterSuggestion[] = [
  'request.method == "POST"',
  "response.status >= 500",
  "response.status >= 400",
  'request.url contains "/api/"',
  "duration > 1000ms",
  'request.url startsWith "/"',
  'request.method == "GET"',
  "response.status == 404",
  'tls == "not decrypted"',
  'response.unanswered != ""',
].map((text) => ({ text, kinds: kindsOf(text), useCount: 0, lastUsed: 0, builtIn: true }));

export function kindsOf(text: string): SuggestionKind[] {
  const kinds: SuggestionKind[] = [];
  if (/\brequest\.method\b/.test(text)) kinds.push("method");
  if (/\bresponse\.status\b/.test(text)) kinds.push("status");
  if (/\brequest\.url\b/.test(text)) kinds.push("url");
  if (/\bduration\b/.test(text)) kinds.push("duration");
  return kinds;
}

function isSuggestion(value: unknown): value is FilterSuggestion {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.text === "string" &&
    Array.isArray(v.kinds) &&
    typeof v.useCount === "number" &&
    typeof v.lastUsed === "number" &&
    typeof v.builtIn === "boolean"
  );
}

/** The stored (used) suggestions of a namespace; anything malformed in storage is dropped, not trusted. */
export function loadSuggestions(namespaceId: string, storage: Storage = localStorage): FilterSuggestion[] {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(suggestionsKey(namespaceId)) ?? "[]");
    return Array.isArray(parsed) ? parsed.filter(isSuggestion).filter((s) => !s.builtIn) : [];
  } catch {
    return [];
  }
}

function save(namespaceId: string, list: FilterSuggestion[], storage: Storage) {
  try {
    storage.setItem(suggestionsKey(namespaceId), JSON.stringify(list));
  } catch {
    // storage full or unavailable: suggestions are a convenience
  }
}

/** Records a use of a filter: bumps it (or adds it) and keeps the MAX_KEPT most recently used. */
export function recordUse(
  namespaceId: string,
  text: string,
  now: number = Date.now(),
  storage: Storage = localStorage,
): FilterSuggestion[] {
  const trimmed = text.trim();
  if (!trimmed) return loadSuggestions(namespaceId, storage);
  const list = loadSuggestions(namespaceId, storage);
  const key = trimmed.toLowerCase();
  const existing = list.find((s) => s.text.toLowerCase() === key);
  const updated: FilterSuggestion = existing
    ? { ...existing, text: trimmed, useCount: existing.useCount + 1, lastUsed: now }
    : { text: trimmed, kinds: kindsOf(trimmed), useCount: 1, lastUsed: now, builtIn: false };
  const next = [updated, ...list.filter((s) => s !== existing)].sort((a, b) => b.lastUsed - a.lastUsed).slice(0, MAX_KEPT);
  save(namespaceId, next, storage);
  return next;
}

export function forgetSuggestion(namespaceId: string, text: string, storage: Storage = localStorage) {
  const key = text.trim().toLowerCase();
  const next = loadSuggestions(namespaceId, storage).filter((s) => s.text.toLowerCase() !== key);
  save(namespaceId, next, storage);
  return next;
}

/**
 * What to show under the input for the current text: used suggestions first (most used, then most
 * recent), then built-ins; matching is a case-insensitive substring; chips already present are left out.
 */
export function pickSuggestions(stored: FilterSuggestion[], query: string, exclude: string[] = [], limit = MAX_SHOWN): FilterSuggestion[] {
  const q = query.trim().toLowerCase();
  const excluded = new Set(exclude.map((e) => e.trim().toLowerCase()));
  const seen = new Set<string>();
  const used = [...stored].sort((a, b) => b.useCount - a.useCount || b.lastUsed - a.lastUsed);
  const out: FilterSuggestion[] = [];
  for (const s of [...used, ...builtInSuggestions]) {
    const key = s.text.toLowerCase();
    if (seen.has(key) || excluded.has(key)) continue;
    if (q && !key.includes(q)) continue;
    if (key === q) continue;
    seen.add(key);
    out.push(s);
    if (out.length >= limit) break;
  }
  return out;
}
