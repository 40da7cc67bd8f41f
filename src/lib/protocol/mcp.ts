import { type Static, Type } from "@sinclair/typebox";
import { liveLimits } from "./live.ts";

/**
 * The MCP server's tools (POST /mcp, the Model Context Protocol's Streamable HTTP transport): their input schemas,
 * given to agents as JSON Schema and checked on every call, and the bounds of what they answer. Read-only, for the
 * namespace of the bearer token.
 */
export const mcpPath = "/mcp";

/** Summaries per search, and the longest a body may be in get_request's answer (text; the rest is cut and said so). */
export const mcpLimits = { maxSearchResults: 100, defaultSearchResults: 20, maxBodyChars: 32 * 1024, maxServiceRows: 10_000 } as const;

const TimeRange = {
  since: Type.Optional(
    Type.String({
      pattern: "^\\d+(\\.\\d+)?(s|m|h|d)$",
      maxLength: 16,
      description: 'How far back from now, like "15m", "1h", "2d" (default "1h"). Ignored when `from` is given.',
    }),
  ),
  from: Type.Optional(Type.String({ maxLength: 40, description: "Start of the range, an ISO 8601 time (e.g. 2026-11-21T09:00:00Z)." })),
  to: Type.Optional(Type.String({ maxLength: 40, description: "End of the range, an ISO 8601 time (default now)." })),
};

export const SearchRequestsInput = Type.Object(
  {
    filter: Type.Optional(
      Type.String({
        maxLength: liveLimits.maxFilterLength,
        description:
          "Tapscope's filter language over request.method, response.status, request.url, duration, tls, tls.reason, " +
          'tls.server_name and response.unanswered, joined with && and ||: `response.status >= 500 && request.url contains "/api/"`, ' +
          '`response.unanswered != ""` (requests that got no answer: "client_aborted", "server_closed" or "reset"), ' +
          '`request.method == "POST"`, `duration > 500ms`, `request.url matches "^/users/[0-9]+$"`. Empty: every request.',
      }),
    ),
    service: Type.Optional(Type.String({ maxLength: 256, description: "Only requests of this service (list_services names them)." })),
    ...TimeRange,
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: mcpLimits.maxSearchResults,
        description: `Most results to return, newest first (default ${mcpLimits.defaultSearchResults}, at most ${mcpLimits.maxSearchResults}).`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type SearchRequestsInput = Static<typeof SearchRequestsInput>;

export const GetRequestInput = Type.Object(
  { event_id: Type.String({ maxLength: 64, description: "The request's event_id, as search_requests returns it." }) },
  { additionalProperties: false },
);
export type GetRequestInput = Static<typeof GetRequestInput>;

export const ListServicesInput = Type.Object({ ...TimeRange }, { additionalProperties: false });
export type ListServicesInput = Static<typeof ListServicesInput>;

export const RecentErrorsInput = Type.Object(
  {
    ...TimeRange,
    min_status: Type.Optional(
      Type.Integer({ minimum: 400, maximum: 599, description: "Lowest status counted as an error (default 500)." }),
    ),
    limit: SearchRequestsInput.properties.limit,
  },
  { additionalProperties: false },
);
export type RecentErrorsInput = Static<typeof RecentErrorsInput>;

/**
 * The tools, with what an agent reads to choose one. Endpoint statistics (latency and error rate per route) join this
 * table once the store computes them.
 */
export const mcpTools = {
  search_requests: {
    description:
      "Search the HTTP requests Tapscope captured in this namespace, with the filter language and a time range. Returns " +
      "summaries, newest first (event_id, time, service, direction, method, URL, status, duration, parent), and how " +
      "many matched in all. Use get_request with an event_id for headers, bodies and timings.",
    inputSchema: SearchRequestsInput,
  },
  get_request: {
    description:
      "One captured request in full: request and response headers, bodies as text (binary bodies described, long " +
      "ones cut), timings (connect, TLS, send, wait, receive), the process and host, the inbound request it was made " +
      "under (parent) and the outbound calls made while serving it (children). Secrets were redacted at capture.",
    inputSchema: GetRequestInput,
  },
  list_services: {
    description:
      "The services seen in this namespace over a time range, with how many requests each served or made and how " +
      "many failed (status 500 or more, or no response), and when each was last seen.",
    inputSchema: ListServicesInput,
  },
  recent_errors: {
    description:
      "The most recent failed requests (status >= min_status, default 500) over a time range, newest first, as " +
      "search_requests summaries.",
    inputSchema: RecentErrorsInput,
  },
} as const;

export type McpToolName = keyof typeof mcpTools;
