import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Elysia } from "elysia";
import { isAllowedOrigin, principalFromRequest } from "~/api/plugins/auth.ts";
import { JSON_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { mcpPath } from "~/lib/protocol/mcp.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createMcpServer } from "~/services/mcp/mcp-server.ts";

const unauthorized = (message: string) =>
  new Response(JSON.stringify({ error: message }), {
    status: 401,
    headers: { "content-type": "application/json; charset=utf-8", "www-authenticate": 'Bearer realm="tapscope"' },
  });

/**
 * /mcp: the Model Context Protocol over its Streamable HTTP transport (the official SDK, stateless: every request
 * carries the token and is answered in JSON), for AI agents. A namespace token as `Authorization: Bearer` is looked up
 * on every request, so a deleted token is refused on its next call; calls are rate limited per token, and each tool's
 * query goes through worker routing under the store's limits, as the explorer's do.
 */
export function mcpRoutes({ ctx, workers, limits }: { ctx: ServiceContext; workers: WorkerRegistry; limits: ClientLimits }) {
  async function handle(request: Request, body: unknown): Promise<Response> {
    // Browsers send Origin; an agent does not. A page elsewhere never gets to use a token it was handed.
    if (request.headers.has("origin") && !isAllowedOrigin(request, ctx.config)) {
      throw new AppError("FORBIDDEN", "forbidden: cross-site request refused");
    }
    if (!request.headers.has("authorization")) return unauthorized("MCP needs a namespace token: Authorization: Bearer <token>");
    const principal = await principalFromRequest({ ctx, request });
    if (!principal) return unauthorized("the token was not recognised (deleted, or mistyped?)");
    if (principal.kind !== "namespaceToken") return unauthorized("MCP takes a namespace token (Tokens, in the dashboard)");
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
      const response = await transport.handleRequest(request, typeof body === "object" && body !== null ? { parsedBody: body } : undefined);
      response.headers.set("cache-control", "no-store");
      return response;
    } finally {
      void server.close();
    }
  }

  const notAllowed = () =>
    new Response(
      JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this server answers POST only" }, id: null }),
      {
        status: 405,
        headers: { allow: "POST", "content-type": "application/json" },
      },
    );

  return new Elysia({ name: "mcp" })
    .post(mcpPath, ({ request, body }) => handle(request, body))
    .get(mcpPath, notAllowed)
    .delete(mcpPath, notAllowed);
}
