import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { AppError, errorMessage } from "~/lib/errors.ts";
import { type McpToolName, mcpTools } from "~/lib/protocol/mcp.ts";
import { log } from "~/lib/server/logger.ts";
import { buildInfo } from "~/lib/server/version.ts";
import { getRequest } from "./get-request.ts";
import { listServices } from "./list-services.ts";
import { type McpDeps, McpToolError } from "./namespace-query.ts";
import { recentErrors } from "./recent-errors.ts";
import { searchRequests } from "./search-requests.ts";

const handlers: { [Name in McpToolName]: (deps: McpDeps, input: never) => Promise<unknown> } = {
  search_requests: searchRequests,
  get_request: getRequest,
  list_services: listServices,
  recent_errors: recentErrors,
};

/** JSON Schema as agents read it: the TypeBox schema without its own markers. */
function jsonSchema(schema: TSchema): { type: "object"; [key: string]: unknown } {
  return JSON.parse(JSON.stringify(schema));
}

function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

/** Why arguments do not fit a tool's schema, in one line an agent can act on; null when they fit. */
function inputProblem(schema: TSchema, input: unknown): string | null {
  const first = Value.Errors(schema, input).First();
  if (!first) return null;
  return `${first.path ? `${first.path.slice(1).replaceAll("/", ".")}: ` : ""}${first.message}`;
}

/**
 * The MCP server of one request (the transport is stateless: a server per request, for the token that request
 * carried). Read-only tools over the caller's namespace; what a tool cannot do comes back as its error text.
 */
export function createMcpServer(deps: McpDeps): Server {
  const server = new Server(
    { name: "tapscope", version: buildInfo.version },
    {
      capabilities: { tools: {} },
      instructions:
        "Tapscope captured the HTTP requests of this namespace's programs. search_requests (filter language, time " +
        "range) finds them, get_request reads one in full, list_services and recent_errors give the overview.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: Object.entries(mcpTools).map(([name, tool]) => ({
      name,
      description: tool.description,
      inputSchema: jsonSchema(tool.inputSchema),
      annotations: { readOnlyHint: true, openWorldHint: false },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const name = request.params.name;
    if (!Object.hasOwn(mcpTools, name))
      return failure(`unknown tool "${name.slice(0, 64)}"; the tools are ${Object.keys(mcpTools).join(", ")}`);
    const tool = mcpTools[name as McpToolName];
    const input = request.params.arguments ?? {};
    const problem = inputProblem(tool.inputSchema, input);
    if (problem) return failure(`invalid arguments: ${problem}`);
    try {
      const answer = await handlers[name as McpToolName](deps, input as never);
      return { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: answer as Record<string, unknown> };
    } catch (err) {
      if (err instanceof McpToolError) return failure(err.message);
      if (err instanceof AppError) return failure(err.message);
      log.error("MCP tool failed", { tool: name, namespaceId: deps.caller.namespaceId, err: errorMessage(err) });
      return failure("the tool failed on the server; try again");
    }
  });
  return server;
}
