import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawn } from "bun";
import { eventFieldTable, type TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";
import { webSocketEvents } from "../support/websocket-events.ts";

const root = join(import.meta.dir, "../..");

async function runQuery(args: string[], env: Record<string, string>) {
  const child = spawn([process.execPath, "src/main.ts", "query", ...args], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout as ReadableStream).text(),
    new Response(child.stderr as ReadableStream).text(),
    child.exited,
  ]);
  return { stdout, stderr, code };
}

describe("tapscope query (subprocess against a real server)", () => {
  let s: TunnelServer;
  let token: string;
  let env: Record<string, string>;
  const base = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000;
  const events: TracedEvent[] = [];

  beforeAll(async () => {
    s = await startTunnelServer();
    const owner = await s.onboardedUser();
    token = await s.namespaceToken(owner);
    env = { TAPSCOPE_TOKEN: token, TAPSCOPE_ENDPOINT: s.base };
    events.push(
      makeEvent({
        time: (base + 1000) * 1000 + 7,
        http_req_method: "GET",
        http_req_path: "/api/users/1",
        http_resp_status_code: 200,
        http_duration: 1500,
      }),
      makeEvent({
        time: (base + 2000) * 1000,
        http_req_method: "POST",
        http_req_path: "/api/orders",
        http_resp_status_code: 502,
        http_duration: 250_000,
      }),
      makeEvent({
        time: (base + 3000) * 1000,
        http_req_method: "GET",
        http_req_path: "/health",
        http_resp_status_code: 503,
        http_duration: 800,
      }),
      makeEvent({
        time: (base + 4000) * 1000,
        http_req_method: "DELETE",
        http_req_path: "/api/users/2",
        http_resp_status_code: 500,
        http_duration: 2_345_678,
      }),
      // Two hours ago: outside --since 1h.
      makeEvent({
        time: (base - 7_200_000) * 1000,
        http_req_path: "/api/old",
        http_resp_status_code: 500,
      }),
    );
    await s.ingest(owner.namespaceId, events);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  test("--format table: aligned time, status, method, URL, duration, newest first, filtered", async () => {
    const r = await runQuery(
      ["--since", "1h", "--filter", 'response.status >= 500 && request.url contains "/api/"', "--format", "table"],
      env,
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const t = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "");
    expect(r.stdout).toBe(
      [
        "TIME                     STATUS  METHOD  URL           DURATION",
        `${t(base + 4000)}  500     DELETE  /api/users/2  2.35s`,
        `${t(base + 2000)}  502     POST    /api/orders   250ms`,
        "",
      ].join("\n"),
    );
  }, 30_000);

  test("decrypted calls: https URLs in the table and the HAR, selected with the tls filter", async () => {
    const other = await s.onboardedUser();
    const otherEnv = { TAPSCOPE_TOKEN: await s.namespaceToken(other), TAPSCOPE_ENDPOINT: s.base };
    const outbound = { http_is_outgoing: true, http_req_host: "api.stripe.com", http_req_path: "/v1/charges", http_duration: 1000 };
    await s.ingest(other.namespaceId, [
      makeEvent({ ...outbound, time: (base + 1000) * 1000, tls_server_name: "api.stripe.com", tags: { tls: "decrypted" } }),
      makeEvent({ ...outbound, time: (base + 2000) * 1000, http_req_host: "plain.test", tags: {} }),
      makeEvent({
        time: (base + 3000) * 1000,
        protocol: "tcp",
        http_req_method: "",
        http_req_path: "",
        http_resp_status_code: 0,
        http_server_addr: "10.0.0.9:443",
        tls_server_name: "pinned.test",
        tags: { tls: "not decrypted", tls_reason: "client rejected the certificate" },
      }),
    ]);
    const table = await runQuery(["--since", "1h", "--format", "table"], otherEnv);
    expect(table.code).toBe(0);
    const urls = table.stdout
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((line) => line.split(/ {2,}/)[3]);
    expect(urls).toEqual(["pinned.test (10.0.0.9:443, tcp)", "http://plain.test/v1/charges", "https://api.stripe.com/v1/charges"]);
    const decrypted = await runQuery(["--since", "1h", "--filter", 'tls == "decrypted"', "--format", "har"], otherEnv);
    expect(decrypted.code).toBe(0);
    expect(JSON.parse(decrypted.stdout).log.entries.map((e: { request: { url: string } }) => e.request.url)).toEqual([
      "https://api.stripe.com/v1/charges",
    ]);
    const refused = await runQuery(["--since", "1h", "--filter", 'tls.reason contains "rejected"', "--format", "json"], otherEnv);
    expect(
      refused.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).tls_server_name),
    ).toEqual(["pinned.test"]);
  }, 30_000);

  test("database calls: the table shows their system, OK or the error code, and the statement; json has the db_ fields", async () => {
    const other = await s.onboardedUser();
    const otherEnv = { TAPSCOPE_TOKEN: await s.namespaceToken(other), TAPSCOPE_ENDPOINT: s.base };
    const call = {
      protocol: "db" as const,
      http_is_outgoing: true,
      http_req_method: "",
      http_req_path: "",
      http_resp_status_code: 0,
      http_server_addr: "127.0.0.1:5432",
      http_duration: 900,
      db_system: "postgresql",
      db_name: "shop",
      db_user: "app",
    };
    await s.ingest(other.namespaceId, [
      makeEvent({ time: (base + 1000) * 1000, http_req_path: "/orders/1", http_resp_status_code: 200 }),
      makeEvent({
        ...call,
        time: (base + 2000) * 1000,
        db_statement: "SELECT id FROM orders WHERE id = 1",
        db_statement_normalized: "SELECT id FROM orders WHERE id = ?",
        db_operation: "SELECT",
        db_rows: 1,
      }),
      makeEvent({
        ...call,
        time: (base + 3000) * 1000,
        db_statement: "SELECT * FROM missing",
        db_statement_normalized: "SELECT * FROM missing",
        db_operation: "SELECT",
        db_error_code: "42P01",
        db_error_message: 'relation "missing" does not exist',
      }),
    ]);
    const table = await runQuery(["--since", "1h", "--format", "table"], otherEnv);
    expect(table.code).toBe(0);
    expect(
      table.stdout
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((line) => line.split(/ {2,}/).slice(1, 4)),
    ).toEqual([
      ["42P01", "PG", "SELECT * FROM missing"],
      ["OK", "PG", "SELECT id FROM orders WHERE id = 1"],
      ["200", "GET", "/orders/1"],
    ]);
    const failed = await runQuery(["--since", "1h", "--format", "json", "--filter", 'db.error == "42P01"'], otherEnv);
    expect(failed.code).toBe(0);
    const lines = failed.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      protocol: "db",
      db_system: "postgresql",
      db_statement: "SELECT * FROM missing",
      db_operation: "SELECT",
      db_name: "shop",
      db_user: "app",
      db_error_code: "42P01",
      db_error_message: 'relation "missing" does not exist',
    });
    const httpOnly = await runQuery(["--since", "1h", "--format", "json", "--filter", 'db.system == ""'], otherEnv);
    expect(
      httpOnly.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).http_req_path),
    ).toEqual(["/orders/1"]);
  }, 30_000);

  test("--format json: one object per line, every field of the event, ISO time with microseconds", async () => {
    const r = await runQuery(["--since", "15m", "--format", "json", "--limit", "2"], env);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    const [first, second] = lines;
    expect(first.time).toBe(new Date(base + 4000).toISOString().replace(".000Z", ".000000Z"));
    expect(first.event_id).toBe(events[3]!.event_id);
    expect(second.event_id).toBe(events[2]!.event_id);
    // Every field in the field table's order (the server's search columns aside), each body followed by its encoding.
    const expected = eventFieldTable
      .filter((f) => !f.name.startsWith("search_"))
      .flatMap((f) => (f.type === "body" ? [f.name, `${f.name}_encoding`] : [f.name]));
    expect(Object.keys(first)).toEqual(expected);
    expect(first).toMatchObject({
      parent_event_id: "",
      http_req_method: "DELETE",
      http_req_path: "/api/users/2",
      http_req_headers: [["Host", "localhost:8080"]],
      http_resp_status_code: 500,
      http_resp_body: "{}",
      http_resp_body_encoding: "text",
      http_resp_body_truncated: false,
      http_duration: 2_345_678,
    });
    expect(r.stderr).toContain("showing the newest 2 of 4 matching requests");
    const all = await runQuery(["--since", "1h", "--format", "json", "--filter", 'request.url startsWith "/api/users/1"'], env);
    const [only] = all.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(only.time).toBe(new Date(base + 1000).toISOString().replace(".000Z", ".000007Z"));
  }, 30_000);

  test("--filter on bodies and headers: text bodies as text, binary as base64, cut bodies said", async () => {
    const user = await s.onboardedUser();
    const userEnv = { TAPSCOPE_TOKEN: await s.namespaceToken(user), TAPSCOPE_ENDPOINT: s.base };
    const b64 = (b: string | Uint8Array) => Buffer.from(b).toString("base64");
    const binary = new Uint8Array([0x0a, 0x05, 0x7a, 0x65, 0x62, 0x72, 0x61, 0x00, 0xff, 0x01]);
    await s.ingest(user.namespaceId, [
      makeEvent({
        time: (base + 1000) * 1000,
        http_req_path: "/orders",
        http_req_body: b64('{"order":"zebra-7781"}'),
        http_req_headers: [["X-Request-Id", "rid-5521"]],
      }),
      makeEvent({ time: (base + 2000) * 1000, http_req_path: "/proto", http_resp_body: b64(binary) }),
      makeEvent({
        time: (base + 3000) * 1000,
        http_req_path: "/cut",
        http_resp_body: b64("zebra-7781 and then the capture limit"),
        http_resp_body_truncated: true,
      }),
      makeEvent({ time: (base + 4000) * 1000, http_req_path: "/other" }),
    ]);
    const paths = (out: string) =>
      out
        .trimEnd()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).http_req_path);

    const byBody = await runQuery(["--since", "1h", "--format", "json", "--filter", 'request.body contains "zebra-7781"'], userEnv);
    expect(byBody.code).toBe(0);
    const [order] = byBody.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(order).toMatchObject({ http_req_path: "/orders", http_req_body: '{"order":"zebra-7781"}', http_req_body_encoding: "text" });
    expect(byBody.stderr).toBe("");

    const byHeader = await runQuery(
      ["--since", "1h", "--format", "json", "--filter", 'request.headers["x-request-id"] == "rid-5521"'],
      userEnv,
    );
    expect(paths(byHeader.stdout)).toEqual(["/orders"]);

    const proto = await runQuery(["--since", "1h", "--format", "json", "--filter", 'request.url == "/proto"'], userEnv);
    const [bin] = proto.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(bin.http_resp_body_encoding).toBe("base64");
    expect(new Uint8Array(Buffer.from(bin.http_resp_body, "base64"))).toEqual(binary);

    const cut = await runQuery(["--since", "1h", "--format", "table", "--filter", 'response.body contains "zebra"'], userEnv);
    expect(cut.code).toBe(0);
    // The protobuf body holds the bytes "zebra" too: binary bodies are searched by their bytes.
    expect(cut.stdout).toContain("/cut");
    expect(cut.stdout).toContain("/proto");
    expect(cut.stderr).toContain("bodies cut at capture were searched as far as they were kept (1 of the 2 shown had one)");

    const needle = await runQuery(["--since", "1h", "--filter", `request.body contains "${"x".repeat(5000)}"`], userEnv);
    expect(needle.code).toBe(2);
    expect(needle.stderr).toStartWith("tapscope query: bad filter: ");
    const unterminated = await runQuery(["--since", "1h", "--filter", 'request.headers["x-request-id" == "a"'], userEnv);
    expect(unterminated.code).toBe(2);
    expect(unterminated.stderr).toStartWith("tapscope query: bad filter: ");
  }, 60_000);

  test("--format har: a HAR 1.2 log with full detail (headers, bodies)", async () => {
    const r = await runQuery(["--since", "1h", "--format", "har"], env);
    expect(r.code).toBe(0);
    const har = JSON.parse(r.stdout);
    expect(har.log.version).toBe("1.2");
    expect(
      har.log.entries.map((e: { request: { method: string; url: string } }) => `${e.request.method} ${new URL(e.request.url).pathname}`),
    ).toEqual(["GET /api/users/1", "POST /api/orders", "GET /health", "DELETE /api/users/2"]);
    const entry = har.log.entries[1];
    expect(entry.response.status).toBe(502);
    expect(entry.response.headers).toContainEqual({
      name: "Content-Type",
      value: "application/json",
    });
    expect(entry.response.content.text).toBe("{}");
  }, 30_000);

  test("WebSocket messages: one JSON line each, and on their handshake's HAR entry as _webSocketMessages", async () => {
    const ws = await s.onboardedUser();
    const wsEnv = { TAPSCOPE_TOKEN: await s.namespaceToken(ws), TAPSCOPE_ENDPOINT: s.base };
    const { handshake, messages } = webSocketEvents((base + 1000) * 1000, [
      { ws_direction: "client", ws_opcode: "text", ws_message: '{"subscribe":"prices"}' },
      { ws_direction: "server", ws_opcode: "text", ws_message: '{"price":101}' },
      { ws_direction: "server", ws_opcode: "binary", ws_payload: Buffer.from([1, 2, 3]).toString("base64") },
      { ws_direction: "client", ws_opcode: "close", ws_close_code: 1000, ws_client_messages: 2, ws_server_messages: 2 },
    ]);
    await s.ingest(ws.namespaceId, [handshake, ...messages, makeEvent({ time: (base + 9000) * 1000, http_req_path: "/later" })]);

    const json = await runQuery(["--since", "1h", "--format", "json", "--filter", 'ws.direction == "server"'], wsEnv);
    expect(json.code).toBe(0);
    const lines = json.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.protocol, l.ws_opcode, l.ws_message, l.ws_payload])).toEqual([
      ["ws", "binary", "", "AQID"],
      ["ws", "text", '{"price":101}', ""],
    ]);

    const table = await runQuery(
      ["--since", "1h", "--format", "table", "--filter", 'ws.opcode == "binary" || ws.message contains "subscribe"'],
      wsEnv,
    );
    expect(table.code).toBe(0);
    expect(
      table.stdout
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((line) => line.split(/ {2,}/).slice(1, 4)),
    ).toEqual([
      ["-", "WS", "WebSocket binary from the server, 3 B"],
      ["-", "WS", "WebSocket text from the client, 22 B"],
    ]);

    // A filter on the messages exports their connection: the handshake with all its messages.
    const har = await runQuery(["--since", "1h", "--format", "har", "--filter", 'ws.message contains "price"'], wsEnv);
    expect(har.code).toBe(0);
    const entries = JSON.parse(har.stdout).log.entries;
    expect(entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname)).toEqual(["/chat"]);
    expect(entries[0]._resourceType).toBe("websocket");
    expect(entries[0]._webSocketMessages.map((m: { type: string; data: string }) => `${m.type} ${m.data}`)).toEqual([
      'send {"subscribe":"prices"}',
      'receive {"price":101}',
      "receive AQID",
    ]);
    expect(entries[0].comment).toContain("closed 1000");
    const all = await runQuery(["--since", "1h", "--format", "har"], wsEnv);
    expect(JSON.parse(all.stdout).log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname)).toEqual([
      "/chat",
      "/later",
    ]);
  }, 30_000);

  test("--from/--to select an absolute range", async () => {
    const from = new Date(base - 7_300_000).toISOString();
    const to = new Date(base - 7_000_000).toISOString();
    const r = await runQuery(["--from", from, "--to", to, "--format", "json"], env);
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).http_req_path),
    ).toEqual(["/api/old"]);
  }, 30_000);

  test("clear errors: no token, bad filter with a caret, unreachable server, refused token", async () => {
    const noToken = await runQuery(["--since", "1h"], {
      TAPSCOPE_ENDPOINT: s.base,
    });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("TAPSCOPE_TOKEN is not set");

    const badFilter = await runQuery(["--filter", "response.status >= 500 && request.nope"], env);
    expect(badFilter.code).toBe(2);
    const lines = badFilter.stderr.split("\n");
    expect(lines[0]).toStartWith("tapscope query: bad filter: ");
    expect(lines[1]).toBe("  response.status >= 500 && request.nope");
    expect(lines[2]).toBe(`  ${" ".repeat("response.status >= 500 && ".length)}^`);

    const unreachable = await runQuery(["--since", "1h"], {
      TAPSCOPE_TOKEN: token,
      TAPSCOPE_ENDPOINT: "http://127.0.0.1:1",
    });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain("cannot reach the server at http://127.0.0.1:1");

    const refused = await runQuery(["--since", "1h"], {
      TAPSCOPE_TOKEN: `tsn_${"A".repeat(43)}`,
      TAPSCOPE_ENDPOINT: s.base,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("refused TAPSCOPE_TOKEN");

    const none = await runQuery(["--since", "1h", "--filter", "response.status == 418"], env);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain("no requests matched");

    const badSince = await runQuery(["--since", "yesterday"], env);
    expect(badSince.code).toBe(2);
    expect(badSince.stderr).toContain("--since must look like");
  }, 30_000);

  test("--format har over many rows: details fetched in batches, progress on stderr", async () => {
    const big = await s.onboardedUser();
    const bigToken = await s.namespaceToken(big);
    const many = Array.from({ length: 1200 }, (_, i) => makeEvent({ time: (base + i) * 1000, http_req_path: `/bulk/${i}` }));
    await s.ingest(big.namespaceId, many);
    const r = await runQuery(["--since", "1h", "--format", "har", "--limit", "10000"], {
      TAPSCOPE_TOKEN: bigToken,
      TAPSCOPE_ENDPOINT: s.base,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("fetched 16/1200 requests");
    expect(r.stderr).toContain("fetched 1200/1200 requests");
    const entries = JSON.parse(r.stdout).log.entries as Array<{
      request: { url: string };
    }>;
    expect(entries).toHaveLength(1200);
    expect(new URL(entries[0]!.request.url).pathname).toBe("/bulk/0");
    expect(new URL(entries[1199]!.request.url).pathname).toBe("/bulk/1199");
  }, 60_000);
});
