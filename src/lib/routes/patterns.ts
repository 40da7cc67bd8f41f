import type { Result } from "~/lib/result.ts";
import { pathSegments, routePath } from "./template.ts";

/**
 * A namespace's explicit route patterns, set by an admin on the Endpoints screen: `/repos/{owner}/{repo}/pulls/{number}`,
 * `/static/{path*}`. A request whose path a pattern matches gets the pattern as its route, whatever its segments look
 * like. `{name}` matches one segment, `{name*}` (last only) one or more; anything else is a literal segment, matched
 * as sent. Where several match, the most specific wins, segment by segment from the left: a literal over `{name}`,
 * `{name}` over `{name*}`.
 */

export const patternLimits = {
  /** Patterns per namespace. */
  maxPatterns: 100,
  maxChars: 256,
  maxSegments: 32,
} as const;

type Node = {
  literals: Map<string, Node> | null;
  param: Node | null;
  /** The pattern a `{name*}` here completes. */
  rest: string | null;
  /** The pattern that ends here. */
  end: string | null;
};

const newNode = (): Node => ({ literals: null, param: null, rest: null, end: null });

const paramName = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;

type Parsed = { text: string; parts: Array<{ kind: "literal"; text: string } | { kind: "param" } | { kind: "rest" }> };

/** One pattern, checked: the parts it matches, or why it is refused (said so an admin can fix it). */
export function parseRoutePattern(raw: string): Result<{ pattern: Parsed }> {
  const text = raw.trim();
  if (text.length === 0) return { ok: false, error: "a pattern cannot be empty" };
  if (text.length > patternLimits.maxChars) return { ok: false, error: `a pattern is at most ${patternLimits.maxChars} characters` };
  if (!text.startsWith("/")) return { ok: false, error: `"${text}" must start with /` };
  if (/[?#\s]/.test(text)) return { ok: false, error: `"${text}" is a path: no query, fragment or spaces` };
  const segments = text === "/" ? [] : text.slice(1).split("/");
  if (segments.length > patternLimits.maxSegments)
    return { ok: false, error: `a pattern has at most ${patternLimits.maxSegments} segments` };
  const parts: Parsed["parts"] = [];
  for (const [i, s] of segments.entries()) {
    if (s.startsWith("{") && s.endsWith("}")) {
      const isRest = s.endsWith("*}");
      const name = s.slice(1, isRest ? -2 : -1);
      if (!paramName.test(name))
        return { ok: false, error: `"${s}" in "${text}": a placeholder is {name} or {name*}, letters, digits and _` };
      if (isRest && i !== segments.length - 1) return { ok: false, error: `"${s}" in "${text}": {name*} can only end a pattern` };
      parts.push({ kind: isRest ? "rest" : "param" });
    } else if (/[{}]/.test(s)) {
      return { ok: false, error: `"${s}" in "${text}": a placeholder is a whole segment, {name}` };
    } else {
      parts.push({ kind: "literal", text: s });
    }
  }
  return { ok: true, pattern: { text, parts } };
}

/** The shape two patterns share when they match the same paths (`/users/{id}` and `/users/{uid}`). */
function shapeOf(p: Parsed): string {
  return p.parts.map((x) => (x.kind === "literal" ? `l:${x.text}` : x.kind)).join("/");
}

/** A namespace's patterns, compiled to match a path in one walk down their segments. */
export type RoutePatterns = { readonly patterns: readonly string[]; match(segments: readonly string[]): string | null };

/** Checks and compiles a list of patterns: the first refused one says why, naming it. */
export function compileRoutePatterns(list: readonly string[]): Result<{ compiled: RoutePatterns }> {
  if (list.length > patternLimits.maxPatterns) return { ok: false, error: `at most ${patternLimits.maxPatterns} patterns per namespace` };
  const root = newNode();
  const shapes = new Map<string, string>();
  const texts: string[] = [];
  for (const raw of list) {
    const parsed = parseRoutePattern(raw);
    if (!parsed.ok) return parsed;
    const { pattern } = parsed;
    const shape = shapeOf(pattern);
    const same = shapes.get(shape);
    if (same !== undefined) return { ok: false, error: `"${pattern.text}" matches the same paths as "${same}"` };
    shapes.set(shape, pattern.text);
    texts.push(pattern.text);
    let node = root;
    for (const part of pattern.parts) {
      if (part.kind === "rest") {
        node.rest = pattern.text;
        break;
      }
      if (part.kind === "param") {
        node.param ??= newNode();
        node = node.param;
        continue;
      }
      node.literals ??= new Map();
      let next = node.literals.get(part.text);
      if (!next) {
        next = newNode();
        node.literals.set(part.text, next);
      }
      node = next;
    }
    if (pattern.parts.at(-1)?.kind !== "rest") node.end = pattern.text;
  }
  const walk = (node: Node, segments: readonly string[], i: number): string | null => {
    if (i === segments.length) return node.end;
    const literal = node.literals?.get(segments[i] as string);
    if (literal) {
      const found = walk(literal, segments, i + 1);
      if (found !== null) return found;
    }
    if (node.param) {
      const found = walk(node.param, segments, i + 1);
      if (found !== null) return found;
    }
    return node.rest;
  };
  return { ok: true, compiled: { patterns: texts, match: (segments) => (texts.length === 0 ? null : walk(root, segments, 0)) } };
}

/** The pattern a request-line target matches, or null (a preview for the screen, and what tests ask). */
export function matchRoutePattern(compiled: RoutePatterns, target: string): string | null {
  const path = routePath(target);
  return path === null ? null : compiled.match(pathSegments(path).segments);
}
