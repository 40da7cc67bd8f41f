import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { namespaceMembers, orgs } from "#db/schema/index.ts";
import { TunnelClient, TunnelQueryError } from "~/agent/query-client.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import { decodeResult, decodeResultData, encodeRequest, encodeResult, TunnelProtocolError } from "~/lib/protocol/tunnel.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

const T0 = Date.UTC(2026, 10, 20, 10, 0, 0);
const global = { lowerMs: T0 - 3_600_000, upperMs: T0 + 3_600_000 };
const filter: QueryFilter = { clauses: [], global };

function at(offsetMs: number, overrides: Partial<TracedEvent> = {}): TracedEvent {
  return makeEvent({ time: (T0 + offsetMs) * 1000, ...overrides });
}

describe("query tunnels", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  let other: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  const mine: TracedEvent[] = [];
  let parent: TracedEvent;

  const open = (who: { cookie: string; namespaceId: string }, role: "SELECT" | "INSERT" = "SELECT") =>
    TunnelClient.open({
      endpoint: s.base,
      headers: { cookie: who.cookie, origin: s.base },
      namespaceId: who.namespaceId,
      role,
    });

  beforeAll(async () => {
    s = await startTunnelServer();
    owner = await s.onboardedUser();
    other = await s.onboardedUser();
    parent = at(0, {
      http_req_path: "/api/orders",
      http_resp_status_code: 500,
      http_duration: 900_000,
    });
    mine.push(
      parent,
      at(5, {
        parent_event_id: parent.event_id,
        http_is_outgoing: true,
        http_req_path: "/v1/charge",
        http_req_host: "pay.example",
      }),
      at(-60_000, {
        http_req_path: "/api/users/7",
        http_resp_status_code: 200,
      }),
      at(-120_000, {
        http_req_path: "/health",
        http_resp_status_code: 200,
        http_req_method: "HEAD",
      }),
      at(-180_000, {
        http_req_path: "/api/users/8",
        http_resp_status_code: 503,
        http_req_method: "POST",
      }),
    );
    await s.ingest(owner.namespaceId, mine);
    await s.ingest(other.namespaceId, [
      at(1000, {
        http_req_path: "/secret-of-other",
        http_resp_status_code: 500,
      }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  describe("CreateTunnel", () => {
    test("401 without credentials, 404 for a namespace of another org or an unknown one, 400 for a bad role", async () => {
      expect((await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { origin: null })).status).toBe(401);
      const foreign = await s.call("/api/CreateTunnel", { namespaceId: other.namespaceId, role: "SELECT" }, { cookie: owner.cookie });
      expect(foreign.status).toBe(404);
      const unknown = await s.call("/api/CreateTunnel", { namespaceId: crypto.randomUUID(), role: "SELECT" }, { cookie: owner.cookie });
      expect(unknown.status).toBe(404);
      const badRole = await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "DELETE" }, { cookie: owner.cookie });
      expect(badRole.status).toBe(400);
    });

    test("a member gets an endpoint with a single-use ticket", async () => {
      const res = await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { cookie: owner.cookie });
      expect(res.status).toBe(200);
      expect(res.body.tunnel_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.endpoint).toStartWith(`ws://127.0.0.1:${s.port}/api/Tunnel?ticket=`);
      const first = await TunnelClient.connect(res.body.endpoint);
      const listed = await s.call("/api/ListOpenTunnels", { create_after_time: new Date(0).toISOString() }, { cookie: owner.cookie });
      expect(listed.body.tunnels.map((t: { tunnel_id: string }) => t.tunnel_id)).toContain(res.body.tunnel_id);
      const otherList = await s.call("/api/ListOpenTunnels", {}, { cookie: other.cookie });
      expect(otherList.body.tunnels).toEqual([]);
      await expect(TunnelClient.connect(res.body.endpoint)).rejects.toThrow();
      first.close();
      // A forged or altered ticket does not open either.
      await expect(TunnelClient.connect(res.body.endpoint.replace(/ticket=./, "ticket=x"))).rejects.toThrow();
    });

    test("a member without write may query but not open an INSERT tunnel; tokens may (they carry data rights)", async () => {
      const reader = await s.user();
      await s.db.insert(namespaceMembers).values({
        namespaceId: owner.namespaceId,
        userId: reader.userId,
        hasWrite: false,
      });
      const sel = await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { cookie: reader.cookie });
      expect(sel.status).toBe(200);
      const ins = await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "INSERT" }, { cookie: reader.cookie });
      expect(ins.status).toBe(403);
      const nsToken = await s.namespaceToken(owner);
      expect((await s.call("/api/CreateTunnel", { role: "INSERT" }, { bearer: nsToken, origin: null })).status).toBe(200);
      // A cross-site page cannot open one with the session cookie.
      expect(
        (
          await s.call(
            "/api/CreateTunnel",
            { namespaceId: owner.namespaceId, role: "SELECT" },
            { cookie: owner.cookie, origin: "https://evil.example" },
          )
        ).status,
      ).toBe(403);
      expect((await s.call("/api/ListOpenTunnels", {}, { origin: null })).status).toBe(401);
    });

    test("tokens: a namespace token reaches its own namespace only; an org token its org's namespaces", async () => {
      const nsToken = await s.namespaceToken(owner);
      const own = await s.call("/api/CreateTunnel", { role: "SELECT" }, { bearer: nsToken, origin: null });
      expect(own.status).toBe(200);
      const cross = await s.call(
        "/api/CreateTunnel",
        { namespaceId: other.namespaceId, role: "SELECT" },
        { bearer: nsToken, origin: null },
      );
      expect(cross.status).toBe(404);
      const orgToken = await s.orgToken(owner);
      expect(
        (await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { bearer: orgToken, origin: null })).status,
      ).toBe(200);
      expect(
        (await s.call("/api/CreateTunnel", { namespaceId: other.namespaceId, role: "SELECT" }, { bearer: orgToken, origin: null })).status,
      ).toBe(404);
    });
  });

  describe("queries", () => {
    test("rows: newest first, exact count, the same answer gzip or none", async () => {
      const c = await open(owner);
      for (const compression of ["gzip", "none"] as const) {
        const r = await c.query({ kind: "rows", query: { filter } }, { compression });
        expect(r.data.map((row) => row.http_req_path)).toEqual(["/v1/charge", "/api/orders", "/api/users/7", "/health", "/api/users/8"]);
        expect(r.meta).toContain("http_resp_status_code");
        expect(r.actualNumberOfRows).toBe(5);
        expect(r.rows_before_limit_at_least).toBe(5);
        expect(r.wasRowLimitExceeded).toBe(false);
        expect(r.durationInNanoseconds).toBeGreaterThan(0);
      }
      const raw = await c.send({ kind: "rows", query: { filter, limit: 2 } }, { compression: "gzip" });
      expect(raw.compression).toBe("gzip");
      expect([raw.data[0], raw.data[1]]).toEqual([0x1f, 0x8b]);
      expect(raw.databaseQueryId).toMatch(/\S/);
      const limited = await decodeResultData(raw);
      expect(limited.data).toHaveLength(2);
      expect(limited.wasRowLimitExceeded).toBe(true);
      expect(limited.actualNumberOfRows).toBe(5);
      c.close();
    });

    test("filter language text and clauses select the rows; a bad filter is a database error", async () => {
      const c = await open(owner);
      const r = await c.query({
        kind: "rows",
        query: {
          filter: {
            ...filter,
            clauses: [
              {
                type: "String",
                column: "http_req_method",
                op: "Equals",
                value: "POST",
              },
            ],
          },
        },
        filterText: 'response.status >= 500 && request.url contains "/api/"',
      });
      expect(r.data.map((row) => row.http_req_path)).toEqual(["/api/users/8"]);
      const bad = await c.send({
        kind: "rows",
        query: { filter },
        filterText: "response.status >= ",
      });
      expect(bad.databaseError).toContain("filter:");
      expect(bad.tunnelError).toBeNull();
      c.close();
    });

    test("histogram: 120 buckets with counts and server errors", async () => {
      const c = await open(owner);
      const h = await c.query({ kind: "histogram", query: { filter } }, { compression: "gzip" });
      expect(h.data).toHaveLength(120);
      expect(h.meta).toEqual(["timeMs", "count", "serverErrors", "clientErrors"]);
      expect(h.total).toBe(5);
      expect(h.data.reduce((n, b) => n + Number(b.serverErrors), 0)).toBe(2);
      expect(h.bucketMs).toBe(60_000);
      c.close();
    });

    test("event detail with its children; full events in a batch", async () => {
      const c = await open(owner);
      const d = await c.query({ kind: "event", eventId: parent.event_id });
      expect(d.data[0]!.event_id).toBe(parent.event_id);
      expect(d.data[0]!.http_resp_headers).toEqual(parent.http_resp_headers);
      expect(d.children!.map((e) => e.http_req_path)).toEqual(["/v1/charge"]);
      const ids = mine.map((e) => e.event_id);
      const batch = await c.query({ kind: "events", eventIds: ids });
      expect(batch.data.map((e) => e.event_id).sort()).toEqual([...ids].sort());
      const missing = await c.query({
        kind: "event",
        eventId: crypto.randomUUID(),
      });
      expect(missing.data).toEqual([]);
      c.close();
    });

    test("the in-process worker serving a namespace records lastSeenWorkerTime", async () => {
      const [row] = await s.db.select({ t: orgs.lastSeenWorkerTime }).from(orgs).where(eq(orgs.id, owner.orgId));
      expect(row!.t).toBeInstanceOf(Date);
      expect(Date.now() - row!.t!.getTime()).toBeLessThan(120_000);
    });
  });

  describe("protocol errors", () => {
    test("an unknown compression mode is an error both ways", async () => {
      const c = await open(owner);
      const frame = await encodeRequest({
        queryId: "q-x",
        tags: {},
        compression: "brotli" as "gzip",
        want: { kind: "rows", query: { filter } },
      });
      const r = await c.sendFrame(frame);
      expect(r.tunnelError).toBe('unknown compression mode "brotli"');
      const forged = encodeResult({
        queryId: "a",
        tunnelError: null,
        databaseQueryId: null,
        databaseError: null,
        compression: "lz4" as "gzip",
        data: new Uint8Array(),
      });
      expect(() => decodeResult(forged)).toThrow(TunnelProtocolError);
      c.close();
    });

    test("SQL is refused, in any shape", async () => {
      const c = await open(owner);
      const enc = new TextEncoder();
      const asString = await c.sendFrame(
        await rawRequest(
          { queryId: "s1", compression: "none", bodyCompression: "none" },
          enc.encode(JSON.stringify(`SELECT * FROM "${other.namespaceId.replaceAll("-", "")}"`)),
        ),
      );
      expect(asString.tunnelError).toContain("SQL is not accepted");
      const inBody = await c.sendFrame(
        await rawRequest({ queryId: "s2", compression: "none", bodyCompression: "none" }, enc.encode(JSON.stringify({ sql: "SELECT 1" }))),
      );
      expect(inBody.tunnelError).toContain("SQL is not accepted");
      const inHeader = await c.sendFrame(
        await rawRequest(
          {
            queryId: "s3",
            sql: "SELECT 1",
            compression: "none",
            bodyCompression: "none",
          },
          enc.encode("{}"),
        ),
      );
      expect(inHeader.tunnelError).toContain("SQL is not accepted");
      const garbage = await c.sendFrame(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]));
      expect(garbage.tunnelError).toBe("not a tunnel message");
      c.close();
    });
  });

  test("text frames are refused; a closed tunnel leaves ListOpenTunnels", async () => {
    const created = await s.call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { cookie: owner.cookie });
    const ws = new WebSocket(created.body.endpoint);
    ws.binaryType = "arraybuffer";
    await new Promise((resolve) => {
      ws.onopen = resolve;
    });
    const answer = new Promise<ArrayBuffer>((resolve) => {
      ws.onmessage = (ev) => resolve(ev.data as ArrayBuffer);
    });
    ws.send(JSON.stringify({ sql: "SELECT 1" }));
    expect(decodeResult(new Uint8Array(await answer)).tunnelError).toBe("tunnel messages are binary");
    const listed = async () =>
      (await s.call("/api/ListOpenTunnels", {}, { cookie: owner.cookie })).body.tunnels.map((t: { tunnel_id: string }) => t.tunnel_id);
    expect(await listed()).toContain(created.body.tunnel_id);
    ws.close();
    for (let i = 0; i < 100 && (await listed()).includes(created.body.tunnel_id); i++) await Bun.sleep(20);
    expect(await listed()).not.toContain(created.body.tunnel_id);
  });

  describe("isolation", () => {
    test("a message naming another namespace or org is refused", async () => {
      const c = await open(owner);
      const r = await c.send({ kind: "rows", query: { filter } }, { tags: { namespaceId: other.namespaceId } });
      expect(r.tunnelError).toBe("this tunnel is bound to another namespace");
      const o = await c.send({ kind: "rows", query: { filter } }, { tags: { orgId: other.orgId } });
      expect(o.tunnelError).toBe("this tunnel is bound to another org");
      c.close();
    });

    test("crafted column names, values and ids never reach another namespace's table", async () => {
      const c = await open(owner);
      const otherTable = other.namespaceId.replaceAll("-", "");
      const badColumn = await c.send({
        kind: "rows",
        query: {
          filter: {
            ...filter,
            clauses: [
              {
                type: "String",
                column: `http_req_path FROM ${otherTable} --` as "http_req_path",
                op: "Equals",
                value: "x",
              },
            ],
          },
        },
      });
      expect(badColumn.databaseError).toBe("unknown string column");
      const badSelect = await c.send({
        kind: "rows",
        query: { filter, columns: [`* FROM ${otherTable}` as "time"] },
      });
      expect(badSelect.databaseError).toBe("unknown column");
      for (const value of [`' OR 1=1 --`, `x' UNION SELECT * FROM ${otherTable} --`, "\\' OR ''='"]) {
        const r = await c.query({
          kind: "rows",
          query: {
            filter: {
              ...filter,
              clauses: [
                {
                  type: "String",
                  column: "http_req_path",
                  op: "NotLike",
                  value,
                },
              ],
            },
          },
        });
        expect(r.data.map((row) => row.http_req_path)).not.toContain("/secret-of-other");
        expect(r.actualNumberOfRows).toBe(5);
      }
      const viaText = await c.query({
        kind: "rows",
        query: { filter },
        filterText: `request.url contains "' OR 1=1 --"`,
      });
      expect(viaText.data).toEqual([]);
      // The other namespace's event ids are not found through this tunnel.
      const [theirs] = (
        await s.store!.queryRows(other.namespaceId, {
          filter: { clauses: [], global: { lowerMs: T0, upperMs: T0 + 2000 } },
        })
      ).data;
      expect((await c.query({ kind: "event", eventId: theirs!.event_id })).data).toEqual([]);
      expect((await c.query({ kind: "events", eventIds: [theirs!.event_id] })).data).toEqual([]);
      const injectedId = await c.send({
        kind: "event",
        eventId: `${theirs!.event_id}' OR '1'='1`,
      });
      expect(injectedId.databaseError).toBe("invalid event id");
      const hugeLimit = await c.send({
        kind: "rows",
        query: { filter, limit: 10_001 },
      });
      expect(hugeLimit.databaseError).toContain("limit");
      c.close();
    });
  });

  describe("roles", () => {
    test("SELECT cannot insert; INSERT carries validated events into its own namespace only", async () => {
      const sel = await open(owner);
      const refused = await sel.send({ kind: "insert", events: [at(10)] });
      expect(refused.tunnelError).toBe('SELECT tunnels cannot send "insert" requests');
      const ins = await open(owner, "INSERT");
      const readOnIns = await ins.send({ kind: "rows", query: { filter } });
      expect(readOnIns.tunnelError).toBe('INSERT tunnels cannot send "rows" requests');
      const added = await ins.query({
        kind: "insert",
        events: [at(20, { http_req_path: "/inserted" }), { nonsense: true } as unknown as TracedEvent],
      });
      expect(added.data).toEqual([{ inserted: 1, refused: 1, rateLimited: 0, truncated: 0, storeDropped: 0 }]);
      const bad = await sel
        .query({
          kind: "rows",
          query: { filter },
          filterText: "request.url ~ 1",
        })
        .catch((e: TunnelQueryError) => e);
      expect(bad).toBeInstanceOf(TunnelQueryError);
      const found = await sel.query({
        kind: "rows",
        query: { filter },
        filterText: 'request.url startsWith "/inserted"',
      });
      expect(found.data).toHaveLength(1);
      const theirs = await s.store!.queryRows(other.namespaceId, { filter });
      expect(theirs.data.map((row) => row.http_req_path)).toEqual(["/secret-of-other"]);
      sel.close();
      ins.close();
    });
  });
});

async function rawRequest(header: Record<string, unknown>, body: Uint8Array): Promise<Uint8Array> {
  const head = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + head.length + body.length);
  out.set([0x54, 0x53, 1, 1]);
  new DataView(out.buffer).setUint32(4, head.length);
  out.set(head, 8);
  out.set(body, 8 + head.length);
  return out;
}
