import { describe, expect, test } from "bun:test";
import { compileRoutePatterns, matchRoutePattern, parseRoutePattern, patternLimits } from "~/lib/routes/patterns.ts";

function compiled(list: string[]) {
  const r = compileRoutePatterns(list);
  if (!r.ok) throw new Error(r.error);
  return r.compiled;
}

describe("route patterns", () => {
  const patterns = compiled([
    "/repos/{owner}/{repo}",
    "/repos/{owner}/{repo}/pulls/{number}",
    "/repos/{owner}/settings",
    "/users/search",
    "/users/{login}",
    "/static/{path*}",
    "/",
  ]);

  test("a matching path gets the pattern as written; the query is kept out", () => {
    expect(matchRoutePattern(patterns, "/repos/tapscope/server?tab=code")).toBe("/repos/{owner}/{repo}");
    expect(matchRoutePattern(patterns, "/repos/tapscope/server/pulls/12")).toBe("/repos/{owner}/{repo}/pulls/{number}");
    expect(matchRoutePattern(patterns, "/users/ada")).toBe("/users/{login}");
    expect(matchRoutePattern(patterns, "/")).toBe("/");
  });

  test("the most specific wins: a literal over {name}, {name} over {name*}", () => {
    expect(matchRoutePattern(patterns, "/users/search")).toBe("/users/search");
    expect(matchRoutePattern(patterns, "/repos/tapscope/settings")).toBe("/repos/{owner}/settings");
    // A literal that leads nowhere falls back to the placeholder.
    expect(matchRoutePattern(patterns, "/repos/tapscope/settings/pulls/3")).toBe("/repos/{owner}/{repo}/pulls/{number}");
  });

  test("{name*} takes one or more segments, only at the end", () => {
    expect(matchRoutePattern(patterns, "/static/js/app.js")).toBe("/static/{path*}");
    expect(matchRoutePattern(patterns, "/static/app.js")).toBe("/static/{path*}");
    expect(matchRoutePattern(patterns, "/static")).toBeNull();
  });

  test("paths no pattern covers are left to the templates", () => {
    expect(matchRoutePattern(patterns, "/repos/tapscope")).toBeNull();
    expect(matchRoutePattern(patterns, "/orders/1")).toBeNull();
    expect(matchRoutePattern(compiled([]), "/anything")).toBeNull();
  });

  test("bad patterns are refused with what is wrong", () => {
    const refused = (text: string) => {
      const r = parseRoutePattern(text);
      return r.ok ? null : r.error;
    };
    expect(refused("")).toBe("a pattern cannot be empty");
    expect(refused("users/{id}")).toBe('"users/{id}" must start with /');
    expect(refused("/users/{id}?x=1")).toMatch(/no query/);
    expect(refused("/users/{1d}")).toMatch(/a placeholder is \{name\} or \{name\*\}/);
    expect(refused("/users/id-{id}")).toMatch(/a placeholder is a whole segment/);
    expect(refused("/files/{path*}/raw")).toMatch(/\{name\*\} can only end a pattern/);
    expect(refused(`/${"a".repeat(patternLimits.maxChars)}`)).toMatch(/at most 256 characters/);
    const same = compileRoutePatterns(["/users/{id}", "/users/{uid}"]);
    expect(same).toEqual({ ok: false, error: '"/users/{uid}" matches the same paths as "/users/{id}"' });
    const many = compileRoutePatterns(Array.from({ length: patternLimits.maxPatterns + 1 }, (_, i) => `/p${i}`));
    expect(many).toEqual({ ok: false, error: "at most 100 patterns per namespace" });
  });
});
