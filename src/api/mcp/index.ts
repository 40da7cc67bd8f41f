import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Elysia } from "elysia";
import { authPlugin, isAllowedOrigin } from "~/api/plugins/auth.ts";
import { JSON_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import { routeAccess } from "~/api/routes.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { mcpPath } from "~/lib/protocol/mcp.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createMcpServer } from "~/services/mcp/mcp-server.ts";

/** What a refused agent is told to present (RFC 6750); MCP clients read it to ask their user for a token. */
const CHALLENGE = 'Bearer realm="tapscope"';

const notAllowed = () =>
  new Response(
    JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this server answers POST only" }, id: null }),
    { status: 405, headers: { allow: "POST", "content-type": "application/json" } },
  );

/**
 * /mcp: the Model Context Protocol over its Streamable HTTP transport (the official SDK, stateless: every request
 * carries the token and is answered in JSON), for AI agents. Only a namespace token is admitted (src/api/routes.ts), and
 * it is looked up on every request, so a deleted token is refused on its next call; calls are rate limited per token,
 * and each tool's query goes through worker routing under the store's limits, as the explorer's do.
 */
export function mcpRoutes({ ctx, workers, limits }: { ctx: ServiceContext; workers: WorkerRegistry; limits: ClientLimits }) {
  const guarded = new Elysia()
    // Browsers send Origin; an agent does not. A page elsewhere never gets to use a token it was handed.
    .onTransform(({ request, set }) => {
      if (request.headers.has("origin") && !isAllowedOrigin(request, ctx.config)) {
        throw new AppError("FORBIDDEN", "forbidden: cross-site request refused");
      }
      // Every refusal carries the challenge; an admitted request's answer drops it.
      set.headers["www-authenticate"] = CHALLENGE;
    })
    .use(authPlugin(ctx, routeAccess("POST /mcp")))
    .post(mcpPath, async ({ request, body, principal, set }) => {
      delete set.headers["www-authenticate"];
      limits.admit("mcp", principal.tokenId, "too many MCP requests for this token; slow down");
      const server = createMcpServer({
        workers,
        caller: { namespaceId: principal.namespaceId, orgId: principal.orgId, tokenId: principal.tokenId },
        now: () => ctx.now().getTime(),
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
        maxRequestBodySize: JSON_BODY_LIMIT,
      });
      try {
        await server.connect(transport);
        const response = await transport.handleRequest(
          request,
          typeof body === "object" && body !== null ? { parsedBody: body } : undefined,
        );
        response.headers.set("cache-control", "no-store");
        return response;
      } finally {
        void server.close();
      }
    });

  return new Elysia({ name: "mcp" }).get(mcpPath, notAllowed).delete(mcpPath, notAllowed).use(guarded);
}
