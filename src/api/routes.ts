import { anyone, anyPrincipal, type Callers, signedInUser } from "~/lib/protocol/api/callers.ts";

/**
 * Who may reach each route that is neither a JSON call of lib/protocol/api/calls.ts nor a socket of
 * lib/protocol/sockets.ts (ADR 0028). Each is guarded by authPlugin with its callers, except those marked
 * `isUnguarded`: they refuse nobody and never read a bearer token (what authenticates them instead, if anything, is
 * in `why`). tests/api/security.test.ts fails for a route of the app that is in none of the three tables.
 */
type OtherRoute = { callers: Callers; isUnguarded?: true; why?: string };

export const otherRoutes = {
  "GET /api/GetSelf": { callers: signedInUser },
  "GET /api/DownloadHar": { callers: anyPrincipal },
  "POST /api/DownloadHar": { callers: anyPrincipal },
  "GET /api/LogOut": { callers: anyone, why: "a navigation: signs out the cookie's session, from our own pages only" },
  "GET /api/StripeRedirect": { callers: anyone, why: "a navigation: anyone but a signed-in user is sent to /login" },
  "POST /api/Event": { callers: anyone, why: "the pages' reports, signed in or not (the user is attached with our Origin only)" },
  "POST /api/LogEvent": { callers: anyone, why: "as /api/Event" },
  "GET /api/health": { callers: anyone, isUnguarded: true, why: "a load balancer's check" },
  "GET /api/EmailLoginCallback": { callers: anyone, isUnguarded: true, why: "forwards a sign-in link to its page, spending nothing" },
  "GET /api/GoogleRedirect": { callers: anyone, isUnguarded: true, why: "starts a sign-in" },
  "GET /api/GoogleCallback": { callers: anyone, isUnguarded: true, why: "the provider's state, in its own cookies" },
  "GET /api/GithubRedirect": { callers: anyone, isUnguarded: true, why: "starts a sign-in" },
  "GET /api/GithubCallback": { callers: anyone, isUnguarded: true, why: "the provider's state, in its own cookies" },
  "POST /api/StripeWebhook": { callers: anyone, isUnguarded: true, why: "Stripe's signature of the body" },
  "POST /mcp": { callers: ["namespaceToken"], why: "AI agents' MCP requests: the token is looked up on every one" },
  "GET /mcp": { callers: anyone, isUnguarded: true, why: "405: the MCP transport is stateless, POST only" },
  "DELETE /mcp": { callers: anyone, isUnguarded: true, why: "405, as GET /mcp" },
  "GET /install.sh": { callers: anyone, isUnguarded: true, why: "the installer" },
  "GET /download/:file": { callers: anyone, isUnguarded: true, why: "the binaries" },
  "GET /": { callers: anyone, isUnguarded: true, why: "pages: a loader reads the session cookie for itself (src/ssr/), never a token" },
  "GET /*": { callers: anyone, isUnguarded: true, why: "pages and assets, as GET /" },
} as const satisfies Record<string, OtherRoute>;

export type OtherRouteName = keyof typeof otherRoutes;

/** A route's declaration for its authPlugin, named by its last segment: `authPlugin(ctx, routeAccess("GET /api/GetSelf"))`. */
export function routeAccess<const Name extends OtherRouteName>(
  name: Name,
): { callers: (typeof otherRoutes)[Name]["callers"]; what: string } {
  return { callers: otherRoutes[name].callers, what: name.slice(name.lastIndexOf("/") + 1) };
}
