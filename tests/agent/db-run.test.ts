import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type DatabaseServer, dbPassword, startMariadb, startPostgres, startRedisServer } from "../support/databases.ts";
import { freePort } from "../support/ports.ts";
import { ROOT, type Running, scratchDir, start } from "./harness.ts";
import { makeCa, makeLeaf } from "./tls-pki.ts";

/**
 * Real services under `tapscope run` using real PostgreSQL, MariaDB and Redis through their usual client libraries:
 * a Flask service (psycopg2, PyMySQL, redis-py) and a Node service (node-postgres over TLS, mysql2, ioredis). Their
 * pooled connections are opened before any request; each call still gets the request it was made for as its parent.
 */
const PYTHON = "/usr/bin/python3";
const scratch = scratchDir("tapscope-db-run-");
let pg: DatabaseServer;
let pgScram: DatabaseServer;
let maria: DatabaseServer;
let redis: DatabaseServer;
let caFile: string;
const running: Running[] = [];

beforeAll(async () => {
  makeCa(scratch.dir, "ca");
  const leaf = makeLeaf(scratch.dir, "ca", "db", ["DNS:localhost", "IP:127.0.0.1"]);
  caFile = join(scratch.dir, "ca.crt");
  [pg, pgScram, maria, redis] = await Promise.all([
    startPostgres({ tls: leaf, auth: "md5" }),
    startPostgres({ tls: leaf, auth: "scram" }),
    startMariadb(),
    startRedisServer(),
  ]);
}, 240_000);

afterAll(async () => {
  for (const r of running) await r.stop();
  for (const server of [pg, pgScram, maria, redis]) server?.stop();
  scratch.cleanup();
});

function serviceEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: String(port),
    PG_PORT: String(pg.port),
    MYSQL_PORT: String(maria.port),
    REDIS_PORT: String(redis.port),
    DB_PASSWORD: dbPassword,
    ...extra,
  };
}

async function get(port: number, path: string, init?: RequestInit): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
  return { status: response.status, body: await response.text() };
}

/** The database calls made for `request`, in time order. */
const childrenOf = (events: TracedEvent[], request: TracedEvent) =>
  events.filter((e) => e.parent_event_id === request.event_id && e.protocol === "db").sort((a, b) => a.time - b.time);

const inbound = (events: TracedEvent[], path: string) =>
  events.find((e) => e.protocol === "http" && !e.http_is_outgoing && e.http_req_path === path);

describe("a Flask service on PostgreSQL, MariaDB and Redis", () => {
  const requests: Array<[string, RequestInit | undefined]> = [
    ["/orders/1", undefined],
    ["/slow", undefined],
    ["/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token: "tok-2" }) }],
    ["/broken", undefined],
  ];

  test("answers the same traced as untraced, and each request's calls are its children in time order", async () => {
    const answers: Record<string, Array<{ status: number; body: string }>> = { direct: [], traced: [] };
    for (const mode of ["direct", "traced"] as const) {
      const port = await freePort();
      const service = start([PYTHON, join(ROOT, "tests/agent/fixtures/db-service.py")], {
        traced: mode === "traced",
        env: serviceEnv(port),
        runArgs: ["--log"],
      });
      running.push(service);
      await service.waitForOutput("ready", 60_000);
      await Bun.sleep(300);
      for (const [path, init] of requests) answers[mode]!.push(await get(port, path, init));
      if (mode === "direct") {
        await service.stop();
        continue;
      }
      const events = await service.waitForEvents(4, (e) => e.protocol === "http" && !e.http_is_outgoing, 20_000);
      await Bun.sleep(500);
      const all = service.events();
      await service.stop();

      const order = inbound(all, "/orders/1")!;
      const calls = childrenOf(all, order);
      expect(calls.map((e) => [e.db_system, e.db_operation])).toEqual([
        ["redis", "GET"],
        ["postgresql", "BEGIN"],
        ["postgresql", "SELECT"],
        ["postgresql", "COMMIT"],
        ["mysql", "SELECT"],
        ["redis", "SET"],
      ]);
      expect(calls[2]!.db_statement).toBe("SELECT id, item FROM orders WHERE id = 1");
      expect(calls[2]!.db_statement_normalized).toBe("SELECT id, item FROM orders WHERE id = ?");
      expect([calls[2]!.db_rows, calls[2]!.db_user, calls[2]!.db_name]).toEqual([1, "app", "shop"]);
      expect(calls[4]!.db_statement).toBe("SELECT count FROM stock WHERE item = 'book'");
      expect(calls[5]!.db_statement).toBe("SET order:1 book EX 60");
      // Every call lies within its request, and none of them is a guess: one request was in flight.
      for (const call of calls) {
        expect(call.time).toBeGreaterThanOrEqual(order.time);
        expect(call.time + call.http_duration).toBeLessThanOrEqual(order.time + order.http_duration);
        expect(call.tags.parent_guess).toBeUndefined();
      }

      const slow = childrenOf(all, inbound(all, "/slow")!);
      const slowest = slow.reduce((a, b) => (b.http_duration > a.http_duration ? b : a));
      expect([slowest.db_statement, slowest.http_duration >= 300_000]).toEqual(["SELECT pg_sleep(0.3)", true]);

      // The token the request sent is redacted in its body and in the statement it led to (the fixture's own seed
      // INSERT names no column, so nothing there says its values are secret).
      const loginRequest = inbound(all, "/login")!;
      const loginCalls = childrenOf(all, loginRequest);
      const login = loginCalls.find((e) => e.db_operation === "SELECT")!;
      expect(login.db_statement).toBe("SELECT id FROM orders WHERE secret_token = '[redacted]'");
      expect(JSON.stringify([loginRequest, ...loginCalls])).not.toContain("tok-2");
      expect(JSON.stringify(all)).not.toContain(dbPassword);

      const broken = childrenOf(all, inbound(all, "/broken")!).find((e) => e.db_operation === "SELECT")!;
      expect([broken.db_error_code, broken.db_error_message]).toEqual(["42P01", 'relation "missing_table" does not exist']);

      // The run says how many calls each protocol made, and printed a line for each.
      const stderr = service.stderr();
      expect(stderr).toMatch(/database calls: \d+ postgresql, \d+ mysql, \d+ redis/);
      expect(stderr).toMatch(/→pg +OK +SELECT id, item FROM orders WHERE id = 1/);
      expect(stderr).toMatch(/→pg +42P01 SELECT \* FROM missing_table/);
      expect(events.length).toBeGreaterThanOrEqual(4);
    }
    expect(answers.traced).toEqual(answers.direct);
  }, 180_000);
});

describe("a Node service on PostgreSQL over TLS, MariaDB and Redis", () => {
  test("node-postgres's TLS is decrypted (verified against PGSSLROOTCERT), prepared statements and pipelines are read", async () => {
    const port = await freePort();
    const service = start(["node", join(ROOT, "tests/agent/fixtures/db-service.mjs")], {
      env: serviceEnv(port, { PGSSLROOTCERT: caFile }),
    });
    running.push(service);
    await service.waitForOutput("ready", 60_000);
    const first = await get(port, "/parts/1");
    const second = await get(port, "/parts/2");
    expect(JSON.parse(first.body)).toEqual({ id: 1, name: "gear", qty: 4, seen: "miss", views: "number" });
    expect(JSON.parse(second.body)).toMatchObject({ id: 2, name: "bolt", qty: 9 });
    await service.waitForEvents(2, (e) => e.protocol === "http" && !e.http_is_outgoing, 20_000);
    // On relay threads a request's calls may come a batch after the request itself.
    const callsOf = (path: string) => {
      const events = service.events();
      const request = inbound(events, path);
      return request ? childrenOf(events, request) : [];
    };
    for (const deadline = Date.now() + 20_000; callsOf("/parts/2").length < 4 && Date.now() < deadline; ) await Bun.sleep(100);
    await Bun.sleep(300);
    const all = service.events();
    const calls = childrenOf(all, inbound(all, "/parts/2")!);
    expect(calls.map((e) => [e.db_system, e.db_operation, e.db_statement])).toEqual([
      ["redis", "GET", "get part:2"],
      ["redis", "INCR", "incr views:2"],
      ["postgresql", "SELECT", "SELECT id, name FROM parts WHERE id = $1"],
      ["mysql", "SELECT", "SELECT qty FROM bins WHERE name = ? AND qty > ?"],
    ]);
    const [, , pgCall, myCall] = calls;
    expect([pgCall!.db_parameters, pgCall!.tags.prepared, pgCall!.tags.tls, pgCall!.tls_server_name]).toEqual([
      [["$1", "2"]],
      "part-by-id",
      "decrypted",
      "localhost",
    ]);
    expect(myCall!.db_parameters).toEqual([
      ["?1", "bolt"],
      ["?2", "0"],
    ]);
    await service.stop();
  }, 120_000);

  test("two requests in flight at once: each call says its parent is a guess", async () => {
    const port = await freePort();
    const service = start(["node", join(ROOT, "tests/agent/fixtures/db-service.mjs")], { env: serviceEnv(port) });
    running.push(service);
    await service.waitForOutput("ready", 60_000);
    const [a, b] = await Promise.all([get(port, "/overlap?n=1"), get(port, "/overlap?n=2")]);
    expect([a.body, b.body]).toEqual(['{"n":1}', '{"n":2}']);
    const calls = await service.waitForEvents(2, (e) => e.db_statement === "SELECT $1::int AS n", 20_000);
    for (const call of calls) {
      expect(call.tags.parent_guess).toBe("the newest of 2 requests in flight in this process");
      expect(call.parent_event_id).not.toBe("");
    }
    await service.stop();
  }, 120_000);
});

describe("PostgreSQL TLS", () => {
  const psql = (port: number, mode: string) => [
    "psql",
    `host=localhost port=${port} user=app dbname=shop sslmode=${mode}`,
    "-qAtc",
    "SELECT 'tls ' || ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
  ];

  test("psql with verify-full: decrypted when the login allows it, passed through when the server offers channel binding", async () => {
    for (const [server, expected] of [
      [pg, "decrypted"],
      [pgScram, "not decrypted"],
    ] as const) {
      const env = { PGPASSWORD: dbPassword, PGSSLROOTCERT: caFile };
      const direct = start(psql(server.port, "verify-full"), { traced: false, env });
      const traced = start(psql(server.port, "verify-full"), { env });
      expect([await direct.exited, await traced.exited]).toEqual([0, 0]);
      expect(traced.stdout()).toBe(direct.stdout());
      expect(traced.stdout()).toBe("tls true\n");
      const events = traced.events();
      if (expected === "decrypted") {
        const call = events.find((e) => e.protocol === "db" && e.db_operation === "SELECT")!;
        expect([call.tags.tls, call.db_statement]).toEqual([
          "decrypted",
          "SELECT 'tls ' || ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        ]);
      } else {
        const connection = events.find((e) => e.protocol === "tcp")!;
        expect([connection.tags.tls, connection.tags.tls_reason, connection.tags.db]).toEqual([
          "not decrypted",
          "channel binding",
          "postgresql",
        ]);
        expect(traced.stderr()).toMatch(/not decrypted \(1 channel binding: localhost\)/);
      }
    }
  }, 120_000);

  test("sslmode=require with no trusted root: passed through, the program's output unchanged", async () => {
    const env = { PGPASSWORD: dbPassword };
    const direct = start(psql(pg.port, "require"), { traced: false, env });
    const traced = start(psql(pg.port, "require"), { env });
    expect([await direct.exited, await traced.exited]).toEqual([0, 0]);
    expect(traced.stdout()).toBe(direct.stdout());
    const connection = traced.events().find((e) => e.protocol === "tcp")!;
    expect([connection.tags.tls_reason, connection.tags.db]).toEqual(["upstream certificate not trusted", "postgresql"]);
  }, 120_000);
});
