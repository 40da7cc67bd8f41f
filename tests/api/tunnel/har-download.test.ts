import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { harPageSize } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../../support/tunnel-server.ts";
import { webSocketEvents } from "../../support/websocket-events.ts";

/** HAR downloads for the dashboard: one request, or a query's result set; members of the namespace only. */
describe("HAR download", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  let stranger: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  let parent: TracedEvent;
  let child: TracedEvent;
  const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
  const filter = {
    clauses: [],
    global: { lowerMs: T0 - 60_000, upperMs: T0 + 60_000 },
  };

  beforeAll(async () => {
    s = await startTunnelServer();
    owner = await s.onboardedUser();
    stranger = await s.onboardedUser();
    parent = makeEvent({
      time: T0 * 1000,
      http_req_path: "/checkout",
      http_resp_status_code: 500,
    });
    child = makeEvent({
      time: T0 * 1000 + 10,
      parent_event_id: parent.event_id,
      http_is_outgoing: true,
      http_req_path: "/charge",
      http_req_host: "pay.example",
    });
    await s.ingest(owner.namespaceId, [parent, child, makeEvent({ time: T0 * 1000 - 5_000_000, http_req_path: "/ok" })]);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  const one = (eventId: string, namespaceId = owner.namespaceId, headers: Record<string, string> = { cookie: owner.cookie }) =>
    fetch(`${s.base}/api/DownloadHar?namespaceId=${namespaceId}&eventId=${eventId}`, { headers });

  test("one request with its outbound calls, as an attachment", async () => {
    const res = await one(parent.event_id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="tapscope-${parent.event_id}.har"`);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const har = await res.json();
    expect(har.log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname)).toEqual(["/checkout", "/charge"]);
  });

  test("a result set, filtered", async () => {
    const res = await fetch(`${s.base}/api/DownloadHar`, {
      method: "POST",
      headers: {
        cookie: owner.cookie,
        origin: s.base,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        namespaceId: owner.namespaceId,
        filter,
        filterText: "response.status >= 200",
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toStartWith("attachment; filename=");
    const paths = (await res.json()).log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname);
    expect(paths).toEqual(["/ok", "/checkout", "/charge"]);
    const filtered = await fetch(`${s.base}/api/DownloadHar`, {
      method: "POST",
      headers: {
        cookie: owner.cookie,
        origin: s.base,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        namespaceId: owner.namespaceId,
        filter,
        filterText: "response.status >= 500",
      }),
    });
    expect((await filtered.json()).log.entries).toHaveLength(1);
  });

  test("a WebSocket: its handshake's entry carries its messages, downloaded alone, from one of its messages, or selected by a message filter", async () => {
    const ws = await s.onboardedUser();
    const { handshake, messages } = webSocketEvents(T0 * 1000 + 20_000, [
      { ws_direction: "client", ws_opcode: "text", ws_message: "join #general" },
      { ws_direction: "server", ws_opcode: "text", ws_message: "welcome" },
      { ws_direction: "server", ws_opcode: "close", ws_close_code: 1001, ws_message: "going away" },
    ]);
    await s.ingest(ws.namespaceId, [handshake, ...messages]);
    const alone = await (
      await fetch(`${s.base}/api/DownloadHar?namespaceId=${ws.namespaceId}&eventId=${handshake.event_id}`, {
        headers: { cookie: ws.cookie },
      })
    ).json();
    const selected = await (
      await fetch(`${s.base}/api/DownloadHar`, {
        method: "POST",
        headers: { cookie: ws.cookie, origin: s.base, "content-type": "application/json" },
        body: JSON.stringify({ namespaceId: ws.namespaceId, filter, filterText: 'ws.message contains "welcome"' }),
      })
    ).json();
    // Saving one message saves its connection.
    const ofMessage = await (
      await fetch(`${s.base}/api/DownloadHar?namespaceId=${ws.namespaceId}&eventId=${messages[1]!.event_id}`, {
        headers: { cookie: ws.cookie },
      })
    ).json();
    for (const har of [alone, selected, ofMessage]) {
      expect(har.log.entries).toHaveLength(1);
      const [entry] = har.log.entries;
      expect(entry._resourceType).toBe("websocket");
      expect(entry._webSocketMessages.map((m: { type: string; data: string }) => `${m.type} ${m.data}`)).toEqual([
        "send join #general",
        "receive welcome",
      ]);
      expect(entry.comment).toContain("closed 1001 going away");
    }
  });

  test("401 signed out, 404 for a non-member or a request of another namespace, 400 for a bad filter", async () => {
    expect((await one(parent.event_id, owner.namespaceId, {})).status).toBe(401);
    expect(
      (
        await one(parent.event_id, owner.namespaceId, {
          cookie: stranger.cookie,
        })
      ).status,
    ).toBe(404);
    // The stranger's own namespace does not hold the owner's request.
    expect(
      (
        await one(parent.event_id, stranger.namespaceId, {
          cookie: stranger.cookie,
        })
      ).status,
    ).toBe(404);
    const crossSite = await fetch(`${s.base}/api/DownloadHar`, {
      method: "POST",
      headers: {
        cookie: owner.cookie,
        origin: "https://evil.example",
        "content-type": "application/json",
      },
      body: JSON.stringify({ namespaceId: owner.namespaceId, filter }),
    });
    expect(crossSite.status).toBe(403);
    const bad = await fetch(`${s.base}/api/DownloadHar`, {
      method: "POST",
      headers: {
        cookie: owner.cookie,
        origin: s.base,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        namespaceId: owner.namespaceId,
        filter,
        filterText: "response.status >=",
      }),
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toContain("filter:");
  });
});

/** Issue 14 item 7: three concurrent exports of large bodies took the server from 1.6 to 5.1 GB. */
describe("HAR download of a large result set", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
  const count = 200;
  const filter = { clauses: [], global: { lowerMs: T0 - 60_000, upperMs: T0 + 60_000 } };
  const body = Buffer.alloc(48 * 1024, 7).toString("base64");

  beforeAll(async () => {
    s = await startTunnelServer();
    owner = await s.onboardedUser();
    const events = Array.from({ length: count }, (_, i) =>
      makeEvent({ time: (T0 + i) * 1000, http_req_path: `/big/${i}`, http_resp_body: body }),
    );
    await s.ingest(owner.namespaceId, events);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  const download = () =>
    fetch(`${s.base}/api/DownloadHar`, {
      method: "POST",
      headers: { cookie: owner.cookie, origin: s.base, "content-type": "application/json" },
      body: JSON.stringify({ namespaceId: owner.namespaceId, filter }),
    });

  test("is streamed: full events are fetched a page at a time as the client reads, never all at once", async () => {
    const dispatch = s.workers.dispatch.bind(s.workers);
    let fetched = 0;
    s.workers.dispatch = ((args: Parameters<typeof dispatch>[0]) => {
      const want = args.request.want;
      if (want.kind === "events") fetched += want.eventIds.length;
      return dispatch(args);
    }) as typeof s.workers.dispatch;
    try {
      const res = await download();
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value, { stream: true });
      await Bun.sleep(300);
      // A slow reader holds the export at a page or two (plus what the socket buffers), not 200 large events.
      expect(fetched).toBeLessThanOrEqual(4 * harPageSize);
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
      expect(fetched).toBe(count);
      const har = JSON.parse(text);
      expect(har.log.entries).toHaveLength(count);
      expect(har.log.comment).toBeUndefined();
    } finally {
      s.workers.dispatch = dispatch;
    }
  });

  test("is cut at its cap (a quarter of MEMORY_LIMIT) as valid JSON whose comment says it was truncated", async () => {
    const limit = s.config.memoryLimitBytes;
    s.config.memoryLimitBytes = 4 * 1024 * 1024;
    try {
      const res = await download();
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text.length).toBeLessThanOrEqual(1024 * 1024);
      const har = JSON.parse(text);
      const paths = har.log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname);
      expect(paths.length).toBeGreaterThan(0);
      expect(paths.length).toBeLessThan(count);
      // The oldest requests, in order.
      expect(paths.slice(0, 2)).toEqual(["/big/0", "/big/1"]);
      expect(har.log.comment).toBe(
        `truncated: this HAR holds the oldest ${paths.length} of ${count} requests, the most that fits in 1048576 bytes; narrow the time range or the filter for the rest (the cap is a quarter of MEMORY_LIMIT)`,
      );
    } finally {
      s.config.memoryLimitBytes = limit;
    }
  });
});
