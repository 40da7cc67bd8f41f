import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { orgs } from "#db/schema/index.ts";
import { createPublisher, type NoticeKind } from "~/agent/publish.ts";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { EVENT_BATCH_FORMAT, encodeEventBatch, readEventBatch, SEQ_SET_LATER } from "~/lib/protocol/event-batch.ts";
import { type PublishServerMessage, publishLimits } from "~/lib/protocol/publish.ts";
import { sampleEvent, startServer, type TestServer } from "../support/publish-server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
}, 30_000);
afterAll(() => server.stop());

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(10);
  }
}

/** A raw socket on a fresh ticket, collecting the server's replies. */
async function rawSocket(token?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const joined = (await (await fetch(`${server.endpoint}/api/JoinPublisher`, { method: "POST", headers, body: "{}" })).json()) as {
    websocketUrl: string;
    linkId?: string;
  };
  const replies: PublishServerMessage[] = [];
  const ws = new WebSocket(joined.websocketUrl);
  let closed = false;
  ws.onmessage = (ev) => replies.push(JSON.parse(String(ev.data)));
  ws.onclose = () => {
    closed = true;
  };
  await until(() => replies.some((r) => r.type === "ready"));
  const next = async (count: number) => {
    await until(() => replies.length >= count);
    return replies[count - 1]!;
  };
  return { ws, replies, next, linkId: joined.linkId, isClosed: () => closed };
}

describe("publisher against the real server", () => {
  test("events the server's store had to drop are counted apart and announced", async () => {
    const notices: string[] = [];
    const publisher = createPublisher({ endpoint: server.endpoint, onNotice: (kind) => notices.push(kind) });
    const info = await publisher.join();
    const remove = server.sinks.add({
      accept: () => {},
      offer: (target, events) => (target.linkId === info.linkId ? events.length - 1 : 0),
    });
    try {
      for (let i = 0; i < 10; i++) publisher.send(sampleEvent({ http_req_path: `/d/${i}` }));
      const result = await publisher.close(3000);
      expect(result.sent).toBe(10);
      expect(result.dropped).toBe(0);
      expect(result.storeDropped).toBeGreaterThanOrEqual(9);
      expect(notices).toContain("store-dropped");
    } finally {
      remove();
    }
  });

  test("anonymous: join creates a link; events arrive in the link's sink, counted; close flushes", async () => {
    const publisher = createPublisher({ endpoint: server.endpoint, service: "api" });
    const info = await publisher.join();
    expect(info.linkId).toBeString();
    expect(info.linkUrl).toContain(`/link/${info.linkId}?expiry=`);
    for (let i = 0; i < 25; i++) publisher.send(sampleEvent({ http_req_path: `/n/${i}` }));
    const result = await publisher.close(3000);
    expect(result).toMatchObject({ sent: 25, dropped: 0, refused: 0, rateLimited: 0 });
    const mine = server.received.filter((r) => r.target.linkId === info.linkId);
    expect(mine.every((r) => r.target.namespaceId === null)).toBe(true);
    expect(mine.flatMap((r) => r.events).map((e) => e.http_req_path)).toEqual(Array.from({ length: 25 }, (_, i) => `/n/${i}`));
    expect(server.ingest.countsFor({ namespaceId: null, linkId: info.linkId! })).toMatchObject({ accepted: 25, refused: 0 });
  });

  test("bodies captured as bytes travel as raw bytes in binary batches and arrive as base64", async () => {
    const { ws, replies } = await rawSocket();
    expect(replies[0]).toMatchObject({ type: "ready", formats: [EVENT_BATCH_FORMAT] });
    ws.close();
    const publisher = createPublisher({ endpoint: server.endpoint });
    const info = await publisher.join();
    const body = new TextEncoder().encode('{"name":"zoë"}');
    for (let i = 0; i < 3; i++)
      publisher.send({ ...sampleEvent({ http_req_path: `/b/${i}` }), http_req_body: body, http_resp_body: new Uint8Array([0, 1, 2, 255]) });
    expect(await publisher.close(3000)).toMatchObject({ sent: 3, dropped: 0 });
    const mine = server.received.filter((r) => r.target.linkId === info.linkId).flatMap((r) => r.events);
    expect(mine.map((e) => [e.http_req_path, e.http_req_body, e.http_resp_body])).toEqual(
      Array.from({ length: 3 }, (_, i) => [`/b/${i}`, Buffer.from(body).toString("base64"), "AAEC/w=="]),
    );
  });

  test("an event missing fields (or with wrong types) never breaks the publisher: sent with neutral values", async () => {
    const publisher = createPublisher({ endpoint: server.endpoint });
    const info = await publisher.join();
    const partial = { time: Date.now() * 1000, event_id: crypto.randomUUID(), http_req_headers: "nope", tags: null };
    publisher.send(partial as unknown as CapturedEvent);
    publisher.send(sampleEvent({ http_req_path: "/after" }));
    expect(await publisher.close(3000)).toMatchObject({ sent: 2, dropped: 0, refused: 0 });
    const mine = server.received.filter((r) => r.target.linkId === info.linkId).flatMap((r) => r.events);
    expect(mine.map((e) => [e.event_id, e.http_req_path, e.http_req_headers, e.tags, e.http_req_content_length])).toEqual([
      [partial.event_id, "", [], {}, -1],
      [mine[1]!.event_id, "/after", [["Host", "localhost"]], {}, -1],
    ]);
  });

  test("events with large repeated tags are batched small enough for the server to take them all", async () => {
    const publisher = createPublisher({ endpoint: server.endpoint, batchMaxEvents: 1000 });
    const info = await publisher.join();
    const tags = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`t${i}`, "v".repeat(1000)]));
    for (let i = 0; i < 1000; i++) publisher.send(sampleEvent({ tags }));
    expect(await publisher.close(10_000)).toMatchObject({ sent: 1000, dropped: 0, refused: 0 });
    expect(server.ingest.countsFor({ namespaceId: null, linkId: info.linkId! })).toMatchObject({ accepted: 1000, refused: 0 });
  });

  test("with a namespace token: events go to the namespace, are counted, and the org has seen a publisher", async () => {
    const { namespaceId, orgId, token } = await server.namespaceWithToken();
    const publisher = createPublisher({ endpoint: server.endpoint, token, service: "api" });
    const info = await publisher.join();
    expect(info).toEqual({ namespaceId, linkId: undefined, linkUrl: undefined, expiresAt: undefined });
    for (let i = 0; i < 3000; i++) publisher.send(sampleEvent());
    const result = await publisher.close(5000);
    expect(result).toMatchObject({ sent: 3000, dropped: 0 });
    expect(server.ingest.countsFor({ namespaceId, linkId: null }).accepted).toBe(3000);
    expect(server.received.filter((r) => r.target.namespaceId === namespaceId).flatMap((r) => r.events)).toHaveLength(3000);
    const [org] = await server.db.select().from(orgs).where(eq(orgs.id, orgId));
    expect(org?.hasSeenPublisher).toBe(true);
  });

  test("malformed and oversized messages get an error reply and the socket stays usable", async () => {
    const { ws, next, isClosed } = await rawSocket();
    ws.send("this is not json");
    expect(await next(2)).toMatchObject({ type: "error", code: "malformed" });
    ws.send(new TextEncoder().encode('{"type":"events","seq":1,"events":[{]}'));
    expect(await next(3)).toMatchObject({ type: "error", code: "malformed" });
    ws.send(new Uint8Array(5 * 1024 * 1024).fill(32));
    expect(await next(4)).toMatchObject({ type: "error", code: "too_large" });
    ws.send(JSON.stringify({ type: "subscribe", seq: 2 }));
    expect(await next(5)).toMatchObject({ type: "error", code: "unknown_type", seq: 2 });
    ws.send(JSON.stringify({ type: "events", seq: 3, events: Array.from({ length: 1001 }, () => ({})) }));
    expect(await next(6)).toMatchObject({ type: "error", code: "too_many_events", seq: 3 });
    // One good event, one with a wrong type, one without an id, one with an oversized path (kept, cut).
    const events = [
      sampleEvent(),
      { ...sampleEvent(), http_resp_status_code: "200" },
      { ...sampleEvent(), event_id: undefined },
      sampleEvent({ http_req_path: `/${"x".repeat(20_000)}` }),
    ];
    ws.send(new TextEncoder().encode(JSON.stringify({ type: "events", seq: 4, events })));
    const ack = await next(7);
    expect(ack).toMatchObject({ type: "ack", seq: 4, accepted: 2, refused: 2, rateLimited: 0, truncated: 1 });
    expect((ack as { errors: string[] }).errors).toEqual(["http_resp_status_code must be a number", "event_id must be a UUID"]);
    const cut = server.events().find((e) => e.http_req_path.startsWith("/xxx"))!;
    expect(cut.http_req_path.length).toBe(8192);
    expect(cut.http_req_path.endsWith("…[truncated]")).toBe(true);
    // A binary batch (magic 0x89 "TSB", version 1) whose header length points past the frame.
    ws.send(new Uint8Array([0x89, 0x54, 0x53, 0x42, 1, 0, 0, 0, 255, 255, 0, 0]));
    expect(await next(8)).toMatchObject({ type: "error", code: "malformed", seq: null });
    ws.send(JSON.stringify({ type: "ping", seq: 5 }));
    expect(await next(9)).toEqual({ type: "pong", seq: 5 });
    expect(isClosed()).toBe(false);
    ws.close();
  });

  test("a JSON text frame over the message limit is refused like a binary one, before it is parsed", async () => {
    const { ws, next, isClosed } = await rawSocket();
    const over = publishLimits.maxMessageBytes + 1024;
    const event = sampleEvent({ http_req_path: "/oversized-text-frame", http_resp_body: "A".repeat(over) });
    const text = JSON.stringify({ type: "events", seq: 1, events: [event] });
    expect(Buffer.byteLength(text)).toBeGreaterThan(publishLimits.maxMessageBytes);
    ws.send(text);
    const textReply = await next(2);
    ws.send(new TextEncoder().encode(text));
    const binaryReply = await next(3);
    expect(textReply).toMatchObject({ type: "error", code: "too_large", seq: null });
    expect(textReply).toEqual(binaryReply);
    expect(server.events().some((e) => e.http_req_path === "/oversized-text-frame")).toBe(false);
    // Multi-byte text is counted in bytes, as it came over the wire.
    const wide = JSON.stringify({
      type: "events",
      seq: 2,
      events: [sampleEvent({ http_req_path: `/${"é".repeat(publishLimits.maxMessageBytes / 2)}` })],
    });
    ws.send(wide);
    expect(await next(4)).toMatchObject({ type: "error", code: "too_large" });
    ws.send(JSON.stringify({ type: "ping", seq: 3 }));
    expect(await next(5)).toEqual({ type: "pong", seq: 3 });
    expect(isClosed()).toBe(false);
    ws.close();
  });

  test("hostile field values are refused or cut, never stored as sent", async () => {
    const { ws, next } = await rawSocket();
    const events = [
      { ...sampleEvent(), http_req_headers: [["a", 1]] },
      { ...sampleEvent(), tags: { a: { nested: true } } },
      { ...sampleEvent(), http_resp_body: "<script>not base64</script>" },
      { ...sampleEvent(), protocol: "smtp" },
      { ...sampleEvent(), time: -5 },
      "not an object",
      sampleEvent({ http_resp_body: "A".repeat(2 * 1024 * 1024) }),
    ];
    ws.send(new TextEncoder().encode(JSON.stringify({ type: "events", seq: 1, events })));
    const ack = (await next(2)) as Extract<PublishServerMessage, { type: "ack" }>;
    expect([ack.accepted, ack.refused, ack.truncated]).toEqual([1, 6, 1]);
    const big = server.events().find((e) => e.http_resp_body.startsWith("AAAA"))!;
    expect(big.http_resp_body.length).toBe(publishLimits.maxBodyChars);
    expect(Buffer.from(big.http_resp_body, "base64").length - 1024 * 1024).toBeWithin(0, 3);
    expect(big.http_resp_body_truncated).toBe(true);
    ws.close();
  });

  test("a socket without a valid ticket is refused; a ticket works once", async () => {
    const res = await fetch(`${server.endpoint}/api/PublishEvents?ticket=forged.ticket`, {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      },
    });
    expect(res.status).toBe(401);
    const joined = (await (
      await fetch(`${server.endpoint}/api/JoinPublisher`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    ).json()) as {
      websocketUrl: string;
    };
    const first = new WebSocket(joined.websocketUrl);
    await new Promise((resolve) => (first.onopen = resolve));
    const second = new WebSocket(joined.websocketUrl);
    const outcome = await new Promise<string>((resolve) => {
      second.onopen = () => resolve("open");
      second.onerror = () => resolve("refused");
    });
    expect(outcome).toBe("refused");
    first.close();
  });
});

describe("when the server is away or slow, the program is never slowed", () => {
  test("no server: join fails, sends return at once, events are dropped and counted, close is bounded", async () => {
    const publisher = createPublisher({ endpoint: "http://127.0.0.1:9", reconnectMinMs: 50 });
    await expect(publisher.join()).rejects.toThrow();
    const event = sampleEvent();
    const started = performance.now();
    for (let i = 0; i < 20_000; i++) publisher.send(event);
    const sendMs = performance.now() - started;
    expect(sendMs).toBeLessThan(200);
    expect(publisher.stats().queued).toBe(10_000);
    const closeStarted = performance.now();
    const result = await publisher.close(300);
    expect(performance.now() - closeStarted).toBeLessThan(1000);
    expect(result).toMatchObject({ sent: 0, dropped: 20_000 });
  });

  test("no server and large bodies: the queue is bounded by bytes too, the rest dropped and counted", async () => {
    const publisher = createPublisher({ endpoint: "http://127.0.0.1:9", reconnectMinMs: 50, maxQueuedBytes: 4 * 1024 * 1024 });
    await expect(publisher.join()).rejects.toThrow();
    const body = new Uint8Array(64 * 1024).fill(120);
    const event: CapturedEvent = { ...sampleEvent(), http_req_body: body, http_resp_body: body };
    for (let i = 0; i < 1000; i++) publisher.send(event);
    // Two 64 KiB samples per event: about 31 fit in 4 MiB, far below the 10,000-event count bound.
    const { queued } = publisher.stats();
    expect(queued).toBeGreaterThan(20);
    expect(queued).toBeLessThan(40);
    const result = await publisher.close(300);
    expect(result).toMatchObject({ sent: 0, dropped: 1000 });
  });

  test("the server goes away mid-run: the publisher reconnects when it is back", async () => {
    const other = await startServer();
    const notices: NoticeKind[] = [];
    const publisher = createPublisher({
      endpoint: other.endpoint,
      reconnectMinMs: 50,
      reconnectMaxMs: 200,
      onNotice: (kind) => notices.push(kind),
    });
    const info = await publisher.join();
    publisher.send(sampleEvent());
    await until(() => publisher.stats().sent === 1);
    // Stop accepting: the socket drops; events queue (bounded) meanwhile.
    other.app.server!.stop(true);
    await until(() => !publisher.stats().isConnected);
    expect(notices).toContain("disconnected");
    for (let i = 0; i < 10; i++) publisher.send(sampleEvent());
    const port = new URL(other.endpoint).port;
    other.app.listen({ port: Number(port), hostname: "127.0.0.1" });
    await until(() => publisher.stats().sent === 11, 8000);
    expect(notices).toContain("reconnected");
    // The same anonymous link is kept across reconnects.
    expect(other.received.every((r) => r.target.linkId === info.linkId)).toBe(true);
    const result = await publisher.close(2000);
    expect(result).toMatchObject({ sent: 11, dropped: 0 });
    await other.stop();
  }, 30_000);

  test("a slow server: close gives up after its bounded wait and counts the rest as dropped", async () => {
    // A socket server that accepts but never answers: acks never come.
    const silent = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req, srv) {
        if (new URL(req.url).pathname === "/api/JoinPublisher") {
          return Response.json({ websocketUrl: `ws://127.0.0.1:${srv.port}/socket` });
        }
        return srv.upgrade(req) ? undefined : new Response("no", { status: 400 });
      },
      websocket: {
        open(ws) {
          ws.send(JSON.stringify({ type: "ready", namespaceId: null, linkId: null, maxMessageBytes: 4 << 20, maxEventsPerMessage: 1000 }));
        },
        message() {},
      },
    });
    const publisher = createPublisher({ endpoint: `http://127.0.0.1:${silent.port}` });
    await publisher.join();
    await until(() => publisher.stats().isConnected);
    for (let i = 0; i < 100; i++) publisher.send(sampleEvent());
    const started = performance.now();
    const result = await publisher.close(300);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(2000);
    expect(result).toMatchObject({ sent: 0, dropped: 100 });
    silent.stop(true);
  });

  test("a server that does not announce binary batches gets JSON messages, bodies as base64; encoded batches are refused", async () => {
    const messages: unknown[] = [];
    const older = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req, srv) {
        if (new URL(req.url).pathname === "/api/JoinPublisher") return Response.json({ websocketUrl: `ws://127.0.0.1:${srv.port}/socket` });
        return srv.upgrade(req) ? undefined : new Response("no", { status: 400 });
      },
      websocket: {
        open(ws) {
          ws.send(JSON.stringify({ type: "ready", namespaceId: null, linkId: null, maxMessageBytes: 4 << 20, maxEventsPerMessage: 1000 }));
        },
        message(ws, data) {
          const message = JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data)) as {
            seq: number;
            events: unknown[];
          };
          messages.push(message);
          ws.send(
            JSON.stringify({ type: "ack", seq: message.seq, accepted: message.events.length, refused: 0, rateLimited: 0, truncated: 0 }),
          );
        },
      },
    });
    let refusals = 0;
    const publisher = createPublisher({ endpoint: `http://127.0.0.1:${older.port}`, onEncodedRefused: () => refusals++ });
    await publisher.join();
    await until(() => publisher.stats().isConnected);
    // A relay thread's encoded batch cannot go to it: dropped and counted, and the thread is told to send events.
    publisher.sendEncoded({ frame: encodeEventBatch(SEQ_SET_LATER, [sampleEvent(), sampleEvent()]), count: 2 });
    expect(refusals).toBe(1);
    publisher.send({ ...sampleEvent(), http_resp_body: new Uint8Array([104, 105]) });
    expect(await publisher.close(2000)).toMatchObject({ sent: 1, dropped: 2 });
    expect(messages).toEqual([{ type: "events", seq: 1, events: [expect.objectContaining({ http_resp_body: "aGk=" })] }]);
    older.stop(true);
  });

  test("rate-limited events are reported by the server and told to the user", async () => {
    const limited = await startServer({ INGEST_RATE_LIMIT: "10" });
    const notices: Array<[NoticeKind, string]> = [];
    const publisher = createPublisher({ endpoint: limited.endpoint, onNotice: (kind, message) => notices.push([kind, message]) });
    await publisher.join();
    for (let i = 0; i < 500; i++) publisher.send(sampleEvent());
    const result = await publisher.close(3000);
    // Burst of ten seconds' worth (100) is allowed, the rest refused as over the limit.
    expect(result.sent).toBeGreaterThanOrEqual(100);
    expect(result.sent).toBeLessThan(110);
    expect(result.sent + result.rateLimited).toBe(500);
    expect(notices.some(([kind, message]) => kind === "rate-limited" && /rate limit dropped \d+ events/.test(message))).toBe(true);
    await limited.stop();
  }, 30_000);
});

/**
 * A publish socket that reads binary batches and answers as told: `dropAfter` events on a socket, then that socket
 * closes with them unanswered (its node died); later sockets answer everything.
 */
function flakyServer(options: { acceptsResent: boolean; dropAfter: number; answerFirst?: boolean }) {
  const sockets: Array<Array<{ seq: number; count: number; isResent: boolean }>> = [];
  type Socket = { n: number; events: number };
  const srv = Bun.serve<Socket, never>({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req, s) {
      if (new URL(req.url).pathname === "/api/JoinPublisher") return Response.json({ websocketUrl: `ws://127.0.0.1:${s.port}/socket` });
      return s.upgrade(req, { data: { n: sockets.push([]) - 1, events: 0 } }) ? undefined : new Response("no", { status: 400 });
    },
    websocket: {
      open(ws) {
        ws.send(
          JSON.stringify({
            type: "ready",
            namespaceId: null,
            linkId: null,
            maxMessageBytes: 4 << 20,
            maxEventsPerMessage: 1000,
            formats: [EVENT_BATCH_FORMAT],
            ...(options.acceptsResent ? { acceptsResent: true } : {}),
          }),
        );
      },
      message(ws, data) {
        const state = ws.data;
        const batch = readEventBatch(new Uint8Array(data as Buffer), { maxEvents: 1000, maxExpandedChars: 1 << 30 });
        if ("error" in batch) return;
        sockets[state.n]!.push({ seq: batch.seq, count: batch.count, isResent: batch.isResent });
        state.events += batch.count;
        if (state.n === 0 && !options.answerFirst) {
          if (state.events >= options.dropAfter) ws.close();
          return;
        }
        ws.send(JSON.stringify({ type: "ack", seq: batch.seq, accepted: batch.count, refused: 0, rateLimited: 0, truncated: 0 }));
      },
    },
  });
  return { endpoint: `http://127.0.0.1:${srv.port}`, sockets, stop: () => srv.stop(true) };
}

describe("batches unanswered when the connection goes", () => {
  test("are sent again first on the next connection, marked resent, with their own seq; none is counted dropped", async () => {
    const flaky = flakyServer({ acceptsResent: true, dropAfter: 300 });
    const publisher = createPublisher({ endpoint: flaky.endpoint, batchMaxEvents: 100, reconnectMinMs: 20, reconnectMaxMs: 50 });
    await publisher.join();
    for (let i = 0; i < 300; i++) publisher.send(sampleEvent());
    publisher.flush();
    await until(() => flaky.sockets.length === 2);
    for (let i = 0; i < 100; i++) publisher.send(sampleEvent());
    await until(() => publisher.stats().sent === 400);
    const [first, second] = flaky.sockets;
    expect(first!.map((b) => b.isResent)).toEqual([false, false, false]);
    expect(second!.slice(0, 3)).toEqual(first!.map((b) => ({ ...b, isResent: true })));
    expect(second!.slice(3).every((b) => !b.isResent)).toBe(true);
    expect(await publisher.close(1000)).toMatchObject({ sent: 400, dropped: 0 });
    flaky.stop();
  });

  test("to a server that does not say it drops what it stored, nothing is sent twice: they are counted dropped", async () => {
    const flaky = flakyServer({ acceptsResent: false, dropAfter: 300 });
    const publisher = createPublisher({ endpoint: flaky.endpoint, batchMaxEvents: 100, reconnectMinMs: 20, reconnectMaxMs: 50 });
    await publisher.join();
    for (let i = 0; i < 300; i++) publisher.send(sampleEvent());
    publisher.flush();
    await until(() => flaky.sockets.length === 2 && publisher.stats().isConnected);
    publisher.send(sampleEvent());
    await until(() => publisher.stats().sent === 1);
    expect(flaky.sockets[1]!.map((b) => [b.count, b.isResent])).toEqual([[1, false]]);
    expect(await publisher.close(1000)).toMatchObject({ sent: 1, dropped: 300 });
    flaky.stop();
  });

  test("what is kept for sending again is bounded: past maxUnackedBytes batches still go, but are not kept", async () => {
    const flaky = flakyServer({ acceptsResent: true, dropAfter: 200 });
    const publisher = createPublisher({
      endpoint: flaky.endpoint,
      batchMaxEvents: 10,
      maxUnackedBytes: 20_000,
      reconnectMinMs: 20,
      reconnectMaxMs: 50,
    });
    await publisher.join();
    await until(() => publisher.stats().isConnected);
    for (let i = 0; i < 200; i++) publisher.send(sampleEvent());
    publisher.flush();
    await until(() => flaky.sockets.length === 2 && publisher.stats().inFlight === 0);
    const first = flaky.sockets[0]!.reduce((n, b) => n + b.count, 0);
    const resent = flaky.sockets[1]!.filter((b) => b.isResent).reduce((n, b) => n + b.count, 0);
    expect(first).toBe(200);
    expect(resent).toBeGreaterThan(0);
    expect(resent).toBeLessThan(200);
    expect(await publisher.close(1000)).toMatchObject({ sent: resent, dropped: 200 - resent });
    flaky.stop();
  });
});
