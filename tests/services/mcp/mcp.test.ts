import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { tracedEvent } from "../../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../../support/tunnel-server.ts";

/**
 * The MCP server as an agent meets it: the official SDK's client over Streamable HTTP against a real server (DuckDB
 * store, worker routing): list the tools, search by filter, read a request's body, and lose access once the token is
 * deleted.
 */
let s: TunnelServer;
let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
let token: string;
const nowMs = Date.now();
const b64 = (text: string) => Buffer.from(text).toString("base64");

const inbound = tracedEvent({
  time: (nowMs - 60_000) * 1000,
  service: "checkout",
  http_req_method: "POST",
  http_req_path: "/orders",
  http_req_content_type: "application/json",
  http_req_body: b64('{"sku":"A-1","qty":2}'),
  http_req_headers: [
    ["Content-Type", "application/json"],
    ["Authorization", "Bearer [redacted]"],
  ],
  http_resp_status_code: 502,
  http_resp_content_type: "application/json",
  http_resp_body: b64('{"error":"payment provider down"}'),
});
const outbound = tracedEvent({
  time: (nowMs - 60_000) * 1000 + 500,
  service: "checkout",
  http_is_outgoing: true,
  parent_event_id: inbound.event_id,
  http_req_method: "POST",
  http_req_host: "payments.example",
  http_req_path: "/v1/charges",
  http_resp_status_code: 503,
  http_resp_content_type: "image/png",
  http_resp_body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]).toString("base64"),
});
const healthy = tracedEvent({ time: (nowMs - 30_000) * 1000, service: "catalog", http_req_path: "/items", http_resp_status_code: 200 });

function connect(bearer: string): Promise<Client> {
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
  });
  return client.connect(transport).then(() => client);
}

type Summary = { event_id: string };
type Body = { text: string | null; note?: string };
type Detail = {
  url: string;
  request: { headers: Array<[string, string]>; body: Body };
  response: { body: Body };
  timings_ms: Record<string, number | null>;
  parent: Summary | null;
  children: Summary[];
};

type ToolAnswer = { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent?: Record<string, unknown> };

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  return (await client.callTool({ name, arguments: args })) as ToolAnswer;
}

beforeAll(async () => {
  s = await startTunnelServer();
  owner = await s.onboardedUser();
  token = await s.namespaceToken(owner);
  await s.ingest(owner.namespaceId, [inbound, outbound, healthy]);
  // Another namespace's request, which this token must never reach.
  const stranger = await s.onboardedUser();
  await s.ingest(stranger.namespaceId, [tracedEvent({ event_id: "00000000-0000-4000-8000-00000000beef", http_resp_status_code: 500 })]);
}, 60_000);
afterAll(() => s?.close());

describe("MCP at /mcp", () => {
  test("an agent lists the tools, each with a description and an input schema", async () => {
    const client = await connect(token);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["get_request", "list_services", "recent_errors", "search_requests"]);
      const search = tools.find((t) => t.name === "search_requests")!;
      expect(search.description).toContain("filter language");
      expect(search.inputSchema.type).toBe("object");
      expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(["filter", "since", "from", "to", "limit", "service"]),
      );
      expect(search.annotations?.readOnlyHint).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("search by filter finds the failing requests and not the others; get_request reads the body as text", async () => {
    const client = await connect(token);
    try {
      const found = await call(client, "search_requests", { filter: "response.status >= 500", since: "1h" });
      expect(found.isError).toBeFalsy();
      const answer = found.structuredContent as { matched: number; requests: Array<Record<string, unknown>> };
      expect(answer.matched).toBe(2);
      expect(answer.requests.map((r) => r.event_id).sort()).toEqual([inbound.event_id, outbound.event_id].sort());
      const summary = answer.requests.find((r) => r.event_id === inbound.event_id)!;
      expect(summary).toMatchObject({
        method: "POST",
        status: 502,
        direction: "inbound",
        service: "checkout",
        url: "http://localhost:8080/orders",
      });
      // The text content is the same answer, for clients that only read text.
      expect(JSON.parse(found.content[0]!.text)).toEqual(answer);

      const detail = (await call(client, "get_request", { event_id: inbound.event_id })).structuredContent as Detail;
      expect(detail.request.body.text).toBe('{"sku":"A-1","qty":2}');
      expect(detail.response.body.text).toBe('{"error":"payment provider down"}');
      expect(detail.request.headers).toContainEqual(["Authorization", "Bearer [redacted]"]);
      expect(detail.timings_ms).toMatchObject({ total: 1.5, send: 0.1, wait: 1.2, receive: 0.2 });
      expect(detail.children.map((c) => c.event_id)).toEqual([outbound.event_id]);
      expect(detail.parent).toBeNull();

      const child = (await call(client, "get_request", { event_id: outbound.event_id })).structuredContent as Detail;
      expect(child.parent?.event_id).toBe(inbound.event_id);
      expect(child.url).toBe("http://payments.example/v1/charges");
      expect(child.response.body.text).toBeNull();
      expect(child.response.body.note).toContain("binary body (image/png)");

      const byService = (await call(client, "search_requests", { service: "catalog" })).structuredContent as {
        requests: Array<{ event_id: string }>;
      };
      expect(byService.requests.map((r) => r.event_id)).toEqual([healthy.event_id]);
    } finally {
      await client.close();
    }
  });

  test("services and recent errors give the overview", async () => {
    const client = await connect(token);
    try {
      const services = (await call(client, "list_services", { since: "2h" })).structuredContent as {
        services: Array<Record<string, unknown>>;
      };
      expect(services.services).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ service: "checkout", inbound: 1, outbound: 1, failed: 2 }),
          expect.objectContaining({ service: "catalog", inbound: 1, outbound: 0, failed: 0 }),
        ]),
      );
      const errors = (await call(client, "recent_errors", { min_status: 503 })).structuredContent as {
        requests: Array<{ event_id: string }>;
      };
      expect(errors.requests.map((r) => r.event_id)).toEqual([outbound.event_id]);
    } finally {
      await client.close();
    }
  });

  test("mistakes come back as the tool's error, with the filter's position; other namespaces stay out of reach", async () => {
    const client = await connect(token);
    try {
      const badFilter = await call(client, "search_requests", { filter: "response.status >= " });
      expect(badFilter.isError).toBe(true);
      expect(badFilter.content[0]!.text).toMatch(/^filter: .+ \(at position \d+\)$/);
      const badArgs = await call(client, "search_requests", { limit: 5000 });
      expect(badArgs.isError).toBe(true);
      expect(badArgs.content[0]!.text).toContain("limit");
      const unknownArg = await call(client, "get_request", { event_id: inbound.event_id, sql: "select 1" });
      expect(unknownArg.isError).toBe(true);
      const badRange = await call(client, "search_requests", { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" });
      expect(badRange.content[0]!.text).toContain("the time range is empty");
      const elsewhere = await call(client, "get_request", { event_id: "00000000-0000-4000-8000-00000000beef" });
      expect(elsewhere.isError).toBe(true);
      expect(elsewhere.content[0]!.text).toContain("no request");
      const unknownTool = await call(client, "drop_table", {});
      expect(unknownTool.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("a deleted token is refused on its next call", async () => {
    const second = await s.namespaceToken(owner);
    const client = await connect(second);
    expect((await client.listTools()).tools.length).toBe(4);
    const listed = await s.call("/api/ListNamespaceTokens", { namespaceId: owner.namespaceId }, { cookie: owner.cookie });
    const id = listed.body.tokens.find((t: { name: string }) => second.endsWith(t.name.slice(-4)))?.tokenId;
    expect((await s.call("/api/DeleteNamespaceToken", { tokenId: id }, { cookie: owner.cookie })).status).toBe(200);
    await expect(client.callTool({ name: "search_requests", arguments: {} })).rejects.toThrow("the token is not valid");
    await client.close().catch(() => {});
  });

  test("without a valid namespace token: 401 with WWW-Authenticate; an org token, a session or a foreign page: 403", async () => {
    const initialize = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
    });
    const post = (headers: Record<string, string>) =>
      fetch(`${s.base}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: initialize,
      });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expect((await none.json()).error).toBe("a namespace token (tsk_...) is required");
    const mistyped = await post({ authorization: "Bearer tsk_nope" });
    expect(mistyped.status).toBe(401);
    expect(mistyped.headers.get("www-authenticate")).toContain("Bearer");
    const orgToken = await s.orgToken(owner);
    const asOrg = await post({ authorization: `Bearer ${orgToken}` });
    expect(asOrg.status).toBe(403);
    expect((await asOrg.json()).error).toBe("forbidden: mcp takes a namespace token (tsk_...), not an org worker token (tso_...)");
    // A session is no MCP credential, from our own pages (403 by the declaration) or from anywhere else (CSRF, 403).
    expect((await post({ cookie: owner.cookie, origin: new URL(s.base).origin })).status).toBe(403);
    expect((await post({ cookie: owner.cookie })).status).toBe(403);
    expect((await post({ authorization: `Bearer ${token}`, origin: "https://evil.example" })).status).toBe(403);
    const ok = await post({ authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("www-authenticate")).toBeNull();
    expect((await ok.json()).result.serverInfo.name).toBe("tapscope");
    expect((await fetch(`${s.base}/mcp`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(405);
  });

  test("calls are rate limited per token", async () => {
    const third = await s.namespaceToken(owner);
    const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) {
      const res = await fetch(`${s.base}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${third}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: list,
      });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses.filter((c) => c === 200).length).toBeGreaterThanOrEqual(60);
    expect(statuses).toContain(429);
  }, 30_000);
});
