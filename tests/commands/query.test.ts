import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawn } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { makeEvent } from "../services/live-fixtures.ts";
import { startTunnelServer, type TunnelServer } from "../tunnel/support.ts";

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

  test("--format json: one object per line, spec column names, ISO time with microseconds", async () => {
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
    expect(Object.keys(first)).toEqual([
      "time",
      "event_id",
      "service",
      "hostname",
      "gcp_project",
      "kubernetes_namespace",
      "gke_cluster_location",
      "gke_cluster_name",
      "gke_node_name",
      "process_id",
      "process_executable_name",
      "process_executable_size",
      "process_command_line",
      "process_user",
      "protocol",
      "tls_server_name",
      "http_version",
      "http_is_outgoing",
      "http_client_addr",
      "http_server_addr",
      "http_duration",
      "http_req_method",
      "http_req_path",
      "http_req_body_size_bytes_wire",
      "http_req_transfer_encoding",
      "http_req_content_type",
      "http_req_content_encoding",
      "http_req_content_length",
      "http_req_host",
      "http_req_x_forwarded_for",
      "http_resp_status_code",
      "http_resp_body_size_bytes_wire",
      "http_resp_transfer_encoding",
      "http_resp_content_type",
      "http_resp_content_encoding",
      "http_resp_content_length",
      "http_route",
    ]);
    expect(first).toMatchObject({
      http_req_method: "DELETE",
      http_req_path: "/api/users/2",
      http_resp_status_code: 500,
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
