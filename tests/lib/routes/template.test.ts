import { describe, expect, test } from "bun:test";
import { classifySegment, maxRouteChars, routeLimits, routePath, templatePath } from "~/lib/routes/template.ts";

// Real paths, as programs and their clients send them: what each becomes, and what must stay as it is.

describe("templatePath: values become placeholders, names stay", () => {
  const cases: Array<[string, string]> = [
    // Numeric ids, anywhere in the path.
    ["/users/42", "/users/{id}"],
    ["/users/42/orders/1337", "/users/{id}/orders/{id}"],
    ["/api/v2/repos/123456789/issues/77/comments", "/api/v2/repos/{id}/issues/{id}/comments"],
    // UUIDs, either case.
    ["/orders/3f2504e0-4f89-11d3-9a0c-0305e82c3301", "/orders/{uuid}"],
    ["/orders/3F2504E0-4F89-11D3-9A0C-0305E82C3301/items", "/orders/{uuid}/items"],
    // Hashes: git SHAs, Mongo ObjectIds, content hashes.
    ["/repos/tapscope/commits/9fceb02d0ae598e95dc970b74767f19372d61af8", "/repos/tapscope/commits/{hex}"],
    ["/api/posts/507f1f77bcf86cd799439011", "/api/posts/{hex}"],
    // Random-looking tokens: base64, base64url, ULIDs, Stripe-style ids.
    ["/reset/dGhpcyBpcyBhIHRlc3QgdG9rZW4", "/reset/{token}"],
    ["/invite/k3j9x8q2m1n4b7v6", "/invite/{token}"],
    ["/v1/customers/cus_J3x9ZkLm2PqR7t/sources", "/v1/customers/{token}/sources"],
    ["/events/01ARZ3NDEKTSV4RRFFQ69G5FAV", "/events/{token}"],
    // Dates and times.
    ["/reports/2024-01-31", "/reports/{date}"],
    ["/logs/2024-01-31T10:15:00Z/lines", "/logs/{date}/lines"],
    ["/archive/20240131", "/archive/{id}"],
    // E-mail addresses, sent plain or percent-encoded.
    ["/users/ada@example.com/settings", "/users/{email}/settings"],
    ["/users/ada%40example.com", "/users/{email}"],
    // Numbers that are no ids.
    ["/geo/51.5072/-0.1276", "/geo/{n}/{n}"],
    // File names: the value inside them, the name otherwise.
    ["/static/js/main.8f3a2b1c.chunk.js", "/static/js/main.{hex}.chunk.js"],
    ["/invoices/12345.pdf", "/invoices/{id}.pdf"],
    ["/images/logo.png", "/images/logo.png"],
    ["/favicon.ico", "/favicon.ico"],
    // Version prefixes and versions stay.
    ["/v1/users/42", "/v1/users/{id}"],
    ["/api/v2beta1/projects/7", "/api/v2beta1/projects/{id}"],
    ["/releases/1.2.3", "/releases/1.2.3"],
    // Slugs and names stay (the namespace's guard folds them when there are too many).
    ["/blog/my-first-post-2024", "/blog/my-first-post-2024"],
    ["/blog/release-2024-01-15-notes", "/blog/release-2024-01-15-notes"],
    ["/users/me", "/users/me"],
    ["/api/getUserProfileSettings", "/api/getUserProfileSettings"],
    ["/XMLHttpRequestHandler2/run", "/XMLHttpRequestHandler2/run"],
    ["/products/iPhone15ProMax", "/products/iPhone15ProMax"],
    ["/deadbeef", "/deadbeef"],
    // The query and fragment are kept out.
    ["/search?q=shoes&page=2", "/search"],
    ["/users/42?tab=orders#top", "/users/{id}"],
    ["/?utm_source=x", "/"],
    // Slashes as the router sees them.
    ["/", "/"],
    ["/users/", "/users/"],
    ["//double//slash", "//double//slash"],
    // A forward proxy's absolute-form target: its path.
    ["http://api.example.com/v1/users/42?x=1", "/v1/users/{id}"],
    ["https://api.example.com", "/"],
    // No path: CONNECT's authority, OPTIONS *.
    ["api.example.com:443", ""],
    ["*", ""],
  ];
  for (const [path, route] of cases) {
    test(`${path} -> ${route || '""'}`, () => expect(templatePath(path)).toBe(route));
  }
});

describe("classifySegment", () => {
  test("names are no values", () => {
    for (const name of ["users", "v1", "graphql", "health", "me", "2fa", "oauth2", "README", "en-US", "x_y", "a+b"]) {
      expect(classifySegment(name), name).toBeNull();
    }
  });

  test("a segment past the longest name is a value whatever it looks like", () => {
    expect(classifySegment("a".repeat(routeLimits.maxNameChars))).toBeNull();
    expect(classifySegment("a".repeat(routeLimits.maxNameChars + 1))).toBe("{token}");
  });

  test("a malformed percent-encoding is judged as sent", () => {
    expect(classifySegment("100%")).toBeNull();
    expect(templatePath("/files/%E0%A4%A")).toBe("/files/%E0%A4%A");
  });
});

describe("bounds: a hostile path costs one pass and gives a bounded route", () => {
  test("more segments than a route keeps end it with {rest}", () => {
    const deep = `/${Array.from({ length: 200 }, (_, i) => `s${i}`).join("/")}`;
    const route = templatePath(deep);
    expect(route.split("/").length - 1).toBe(routeLimits.maxSegments + 1);
    expect(route.endsWith("/{rest}")).toBe(true);
  });

  test("a path longer than what is looked at ends with {rest}; no route is longer than maxRouteChars", () => {
    const long = `/${"x".repeat(100_000)}`;
    expect(templatePath(long)).toBe("/{token}/{rest}");
    const worst = `/${Array.from({ length: 40 }, () => "y".repeat(routeLimits.maxNameChars)).join("/")}`;
    expect(templatePath(worst).length).toBeLessThanOrEqual(maxRouteChars);
  });

  test("routePath never reads past the first ? or #", () => {
    expect(routePath("/a?b/c")).toBe("/a");
    expect(routePath("/a#b?c")).toBe("/a");
  });
});
