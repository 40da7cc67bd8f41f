import { Elysia } from "elysia";
import type { ClientLimitKind, ClientLimits } from "~/engines/limits/client-limits.ts";

/** The unauthenticated endpoints and their budget; checked before routing, so a refused request costs no parsing. */
const limitedPaths: Record<string, ClientLimitKind> = {
  "/api/Event": "telemetry",
  "/api/LogEvent": "telemetry",
  "/api/EmailLogin": "emailLogin",
  "/api/EmailLoginCallback": "signIn",
  "/api/FinishEmailLogin": "signIn",
  "/api/GoogleRedirect": "signIn",
  "/api/GoogleCallback": "signIn",
  "/api/GithubRedirect": "signIn",
  "/api/GithubCallback": "signIn",
};

export function clientLimitsPlugin(limits: ClientLimits) {
  return new Elysia().onRequest(({ request, server }) => {
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    if (start < 0 || !url.startsWith("/api/", start)) return;
    const query = url.indexOf("?", start);
    const kind = limitedPaths[url.slice(start, query < 0 ? undefined : query)];
    if (kind) limits.admit(kind, limits.addressOf(request, server));
  });
}
