import type { FilterExpr } from "./ast.ts";
import { maxNeedleLength } from "./fields.ts";
import { parseFilterChipList } from "./parse.ts";

/**
 * The search box: free text becomes one condition on bodies and headers, any case, which the filter input shows and
 * edits like any other. The request detail highlights what the content conditions of a filter look for.
 */

const contentFields = ["request.body", "response.body", "request.headers", "response.headers"] as const;

/** The condition the search box adds for `text`, or an error a person can act on. */
export function searchCondition(text: string): { ok: true; condition: string } | { ok: false; message: string } {
  const needle = text.trim();
  if (needle === "") return { ok: false, message: "Type some text to search for" };
  if (needle.length > maxNeedleLength) {
    return {
      ok: false,
      message: `Search for at most ${maxNeedleLength.toLocaleString("en-US")} characters (this is ${needle.length.toLocaleString("en-US")})`,
    };
  }
  const quoted = JSON.stringify(needle);
  return { ok: true, condition: contentFields.map((f) => `${f} icontains ${quoted}`).join(" || ") };
}

export type HighlightTerms = {
  /** Texts looked for in bodies (any case). */
  body: string[];
  /** Texts looked for in header values (any case), and the header names they were asked of ("" for any header). */
  headers: Array<{ name: string; text: string }>;
};

const textOps = new Set(["contains", "icontains", "==", "startsWith", "endsWith"]);

/** What a filter's content conditions look for (negated ones aside: what they exclude is not on screen). */
export function highlightTerms(chips: readonly string[]): HighlightTerms {
  const terms: HighlightTerms = { body: [], headers: [] };
  const parsed = parseFilterChipList(chips);
  if (!parsed.ok) return terms;
  const walk = (e: FilterExpr, isNegated: boolean) => {
    if (e.kind === "not") walk(e.expr, !isNegated);
    else if (e.kind === "and" || e.kind === "or") {
      walk(e.left, isNegated);
      walk(e.right, isNegated);
    } else if (!isNegated && textOps.has(e.op) && typeof e.value === "string" && e.value !== "") {
      if (e.field === "request.body" || e.field === "response.body") {
        if (!terms.body.includes(e.value)) terms.body.push(e.value);
      } else if (e.field === "request.headers" || e.field === "response.headers") {
        terms.headers.push({ name: e.key ?? "", text: e.value });
      }
    }
  };
  for (const expr of parsed.exprs) walk(expr, false);
  return terms;
}

export type TextPart = { text: string; isMatch: boolean };

/** `text` cut into the parts that match one of `terms` (any case) and those between; at most `maxMatches` marked. */
export function markMatches(text: string, terms: readonly string[], maxMatches = 1000): TextPart[] {
  const needles = terms.map((t) => t.toLowerCase()).filter((t) => t !== "");
  if (needles.length === 0 || text === "") return [{ text, isMatch: false }];
  const lower = text.toLowerCase();
  // Lower-casing may change a string's length (a few characters expand): then match on the text itself.
  const haystack = lower.length === text.length ? lower : text;
  const parts: TextPart[] = [];
  let at = 0;
  let marked = 0;
  while (at < text.length && marked < maxMatches) {
    let best = -1;
    let bestLength = 0;
    for (const n of needles) {
      const i = haystack.indexOf(n, at);
      if (i !== -1 && (best === -1 || i < best || (i === best && n.length > bestLength))) {
        best = i;
        bestLength = n.length;
      }
    }
    if (best === -1) break;
    if (best > at) parts.push({ text: text.slice(at, best), isMatch: false });
    parts.push({ text: text.slice(best, best + bestLength), isMatch: true });
    at = best + bestLength;
    marked++;
  }
  if (at < text.length) parts.push({ text: text.slice(at), isMatch: false });
  return parts;
}
