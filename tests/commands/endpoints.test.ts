import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawn } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

const root = join(import.meta.dir, "../..");

async function run(args: string[], env: Record<string, string>) {
  const child = spawn([process.execPath, "src/main.ts", "endpoints", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
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

describe("tapscope endpoints (subprocess against a real server)", () => {
  let s: TunnelServer;
  let env: Record<string, string>;
  const base = Date.now() - 10 * 60_000;
  const at = (i: number) => (base + i * 100) * 1000;

  beforeAll(async () => {
    s = await startTunnelServer();
    const owner = await s.onboardedUser();
    env = { TAPSCOPE_TOKEN: await s.namespaceToken(owner), TAPSCOPE_ENDPOINT: s.base };
    const events: TracedEvent[] = [];
    // GET /users/{id}: 100 requests, 1..100 ms, two of them 500s.
    for (let i = 1; i <= 100; i++) {
      events.push(
        makeEvent({
          time: at(i),
          service: "api",
          http_req_method: "GET",
          http_req_path: `/users/${i}`,
          http_route: "/users/{id}",
          http_duration: i * 1000,
          http_resp_status_code: i > 98 ? 500 : 200,
          http_req_body_size_bytes_wire: 0,
          http_resp_body_size_bytes_wire: 100,
        }),
      );
    }
    // POST /orders: 10 slow ones, one 404.
    for (let i = 1; i <= 10; i++) {
      events.push(
        makeEvent({
          time: at(200 + i),
          service: "api",
          http_req_method: "POST",
          http_req_path: "/orders",
          http_route: "/orders",
          http_duration: 2_000_000 + i,
          http_resp_status_code: i === 1 ? 404 : 201,
          http_req_body_size_bytes_wire: 1024,
          http_resp_body_size_bytes_wire: 0,
        }),
      );
    }
    // An outgoing call, grouped with its host.
    events.push(
      makeEvent({
        time: at(300),
        service: "api",
        http_is_outgoing: true,
        http_req_host: "api.stripe.com",
        http_req_method: "POST",
        http_req_path: "/v1/charges",
        http_route: "/v1/charges",
        http_duration: 300_000,
        http_resp_status_code: 200,
      }),
    );
    await s.ingest(owner.namespaceId, events);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  test("--format table: one aligned row per endpoint with requests, error rates, percentiles and bytes, sorted", async () => {
    const r = await run(["--since", "1h", "--sort", "p99"], env);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SERVICE +METHOD +ROUTE +REQUESTS +RATE +4XX% +5XX% +P50 +P95 +P99 +MAX +IN +OUT$/);
    const cells = lines.slice(1).map((l) => l.trim().split(/ {2,}/));
    // Sorted by p99: the slow POST /orders first.
    expect(cells.map((c) => [c[1], c[2]])).toEqual([
      ["POST", "/orders"],
      ["↗POST", "api.stripe.com/v1/charges"],
      ["GET", "/users/{id}"],
    ]);
    expect(cells[0]).toEqual([
      "api",
      "POST",
      "/orders",
      "10",
      "0.2/min",
      "10.0",
      "0",
      "2.00s",
      "2.00s",
      "2.00s",
      "2.00s",
      "10.0 KB",
      "0 B",
    ]);
    expect(cells[2]).toEqual([
      "api",
      "GET",
      "/users/{id}",
      "100",
      "1.7/min",
      "0",
      "2.0",
      "50.0ms",
      "95.0ms",
      "99.0ms",
      "100ms",
      "0 B",
      "9.8 KB",
    ]);
  }, 30_000);

  test("--format json: a line per endpoint, durations in microseconds; --filter narrows; --limit keeps the first", async () => {
    const r = await run(["--since", "1h", "--format", "json", "--filter", 'request.route startsWith "/users"'], env);
    expect(r.code).toBe(0);
    const rows = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows).toEqual([
      {
        service: "api",
        direction: "inbound",
        host: "",
        method: "GET",
        route: "/users/{id}",
        requests: 100,
        ratePerSecond: expect.closeTo(100 / 3600, 6),
        clientErrors: 0,
        serverErrors: 2,
        p50Micros: 50_000,
        p95Micros: 95_000,
        p99Micros: 99_000,
        maxMicros: 100_000,
        bytesIn: 0,
        bytesOut: 10_000,
      },
    ]);
    const one = await run(["--since", "1h", "--format", "json", "--limit", "1"], env);
    expect(
      one.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).route),
    ).toEqual(["/users/{id}"]);
  }, 30_000);

  test("bad flags and a bad filter are refused with a clear message before anything is asked", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--since", "soon"], /--since must look like 30s, 15m, 1h or 2d/],
      [["--sort", "speed"], /--sort must be one of requests, rate, errors/],
      [["--limit", "0"], /--limit must be 1 to 1000/],
      [["--format", "har"], /--format must be table or json/],
      [["--filter", "request.route == 5"], /bad filter: expected a quoted string, e.g. "\/users\/\{id\}"/],
    ];
    for (const [args, message] of cases) {
      const r = await run(args, env);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const noToken = await run(["--since", "1h"], { TAPSCOPE_ENDPOINT: s.base });
    expect(noToken.stderr).toMatch(/TAPSCOPE_TOKEN is not set/);
  }, 30_000);
});
