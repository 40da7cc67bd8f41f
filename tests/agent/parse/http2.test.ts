import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, constants, createServer, type Http2Server, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import type { TCPSocketListener } from "bun";
import type { ConnectionTap } from "~/agent/relay/observer.ts";
import { nowMicros } from "~/agent/relay/observer.ts";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { rng } from "../../support/rng.ts";
import { body, chunkings, fakeProcess, host, type Segment, summary, trace } from "./helpers.ts";

/**
 * HTTP/2 with prior knowledge (h2c, what gRPC speaks inside clusters): Node's http2 server and client
 * with a TCP relay between them that hands the tracer a copy. The raw conversation is recorded too,
 * so it can be replayed under every chunking.
 */
let upstream: Http2Server;
type Leg = { tap: ConnectionTap | null; peer: Awaited<ReturnType<typeof Bun.connect>> | null; pending: Uint8Array[] };
let relay: TCPSocketListener<Leg>;
const events: TracedEvent[] = [];
const recorded: Segment[] = [];
const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess, redact: "redact" });

beforeAll(async () => {
  upstream = createServer();
  upstream.on("stream", (stream: ServerHttp2Stream, headers) => {
    const path = headers[":path"];
    const chunks: Buffer[] = [];
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("end", () => {
      if (path === "/grpc.Echo/Say") {
        stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "OK" }));
        stream.end(Buffer.concat(chunks));
      } else if (path === "/gzip") {
        const packed = gzipSync("compressed hello");
        stream.respond({ ":status": 200, "content-type": "text/plain", "content-encoding": "gzip" });
        stream.end(packed);
      } else if (path === "/slow") {
        stream.respond({ ":status": 200 });
        setTimeout(() => stream.end("late"), 300);
      } else {
        stream.respond({ ":status": 201, "content-type": "text/plain", "set-cookie": "sid=secret" });
        stream.end(`got ${Buffer.concat(chunks).length} bytes on ${path}`);
      }
    });
    stream.on("error", () => {});
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;

  relay = Bun.listen<Leg>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        const leg: Leg = { tap: null, peer: null, pending: [] };
        client.data = leg;
        const startedAt = nowMicros();
        leg.peer = await Bun.connect({
          hostname: "127.0.0.1",
          port: upstreamPort,
          socket: {
            data(_s, chunk) {
              client.write(chunk);
              recorded.push({ fromClient: false, data: new Uint8Array(chunk) });
              leg.tap?.onData(false, chunk, nowMicros());
            },
            close() {
              client.end();
              leg.tap?.onClose(nowMicros());
              leg.tap = null;
            },
          },
        });
        leg.tap = tracer.onOpen({
          id: 1,
          direction: "outbound",
          clientAddr: "127.0.0.1:1",
          serverAddr: `127.0.0.1:${upstreamPort}`,
          pid: 7,
          startedAt,
          connectedAt: nowMicros(),
        });
        for (const chunk of leg.pending) {
          leg.peer.write(chunk);
          recorded.push({ fromClient: true, data: chunk });
          leg.tap?.onData(true, chunk, nowMicros());
        }
        leg.pending = [];
      },
      data(client, chunk) {
        const leg = client.data;
        const copy = new Uint8Array(chunk);
        if (!leg.peer) {
          leg.pending.push(copy);
          return;
        }
        leg.peer.write(chunk);
        recorded.push({ fromClient: true, data: copy });
        leg.tap?.onData(true, chunk, nowMicros());
      },
      close(client) {
        client.data.peer?.end();
      },
    },
  });
});

afterAll(() => {
  relay.stop(true);
  upstream.close();
});

function request(session: ReturnType<typeof connect>, headers: Record<string, string>, payload?: Buffer | string) {
  return new Promise<{ status: number; body: string; trailers: Record<string, unknown> }>((resolve, reject) => {
    const req = session.request(headers);
    let status = 0;
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => (status = Number(h[":status"])));
    req.on("trailers", (t) => (trailers = t));
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", () => resolve({ status, body: Buffer.concat(chunks).toString(), trailers }));
    req.on("error", reject);
    if (payload !== undefined) req.end(payload);
    else req.end();
  });
}

describe("HTTP/2 (h2c) through a relay", () => {
  test("concurrent streams, bodies, gRPC trailers, gzip and a reset stream become exchanges", async () => {
    const session = connect(`http://127.0.0.1:${relay.port}`);
    // A protobuf message {1: "hello", 2: 150, 3: {1: "x"}}, length-prefixed.
    const proto = Buffer.from([0x0a, 5, ...Buffer.from("hello"), 0x10, 0x96, 0x01, 0x1a, 3, 0x0a, 1, 0x78]);
    const grpcMessage = Buffer.concat([Buffer.from([0, 0, 0, 0, proto.length]), proto]);
    const [a, b, grpc, gz] = await Promise.all([
      request(session, { ":method": "GET", ":path": "/a?token=abc&x=1", authorization: "Bearer s3cret" }),
      request(session, { ":method": "POST", ":path": "/b", "content-type": "text/plain" }, "x".repeat(50_000)),
      request(session, { ":method": "POST", ":path": "/grpc.Echo/Say", "content-type": "application/grpc", te: "trailers" }, grpcMessage),
      request(session, { ":method": "GET", ":path": "/gzip" }),
    ]);
    expect([a.status, b.body, grpc.trailers["grpc-status"], gz.status]).toEqual([201, "got 50000 bytes on /b", "0", 200]);
    const cancelled = session.request({ ":method": "GET", ":path": "/slow" });
    cancelled.on("error", () => {});
    await new Promise((resolve) => cancelled.on("response", resolve));
    cancelled.close(constants.NGHTTP2_CANCEL);
    // The reset reaches the tracer through the relay; the connection stays open until it has.
    for (let i = 0; i < 300 && !events.some((e) => e.http_req_path === "/slow"); i++) {
      await Bun.sleep(10);
      tracer.flush();
    }
    session.close();

    const byPath = new Map(events.map((e) => [e.http_req_path.split("?")[0], e]));
    expect([...byPath.keys()].sort()).toEqual(["/a", "/b", "/grpc.Echo/Say", "/gzip", "/slow"]);
    const get = byPath.get("/a")!;
    expect([get.protocol, get.http_version, get.http_req_method, get.http_resp_status_code]).toEqual(["http", "2", "GET", 201]);
    expect(get.http_req_path).toBe("/a?token=%5Bredacted%5D&x=1");
    expect(get.http_req_host).toBe(`127.0.0.1:${relay.port}`);
    expect(get.http_req_headers).toContainEqual(["authorization", "Bearer [redacted]"]);
    expect(get.http_resp_headers).toContainEqual(["set-cookie", "sid=[redacted]"]);
    const post = byPath.get("/b")!;
    expect(post.http_req_body_size_bytes_wire).toBe(50_000);
    expect(body(post, "req")).toBe("x".repeat(50_000));
    expect(body(post, "resp")).toBe("got 50000 bytes on /b");
    const rpc = byPath.get("/grpc.Echo/Say")!;
    expect(rpc.http_resp_headers).toContainEqual(["trailer:grpc-status", "0"]);
    expect(Buffer.from(rpc.http_resp_body, "base64")).toEqual(grpcMessage);
    expect(rpc.tags).toMatchObject({
      grpc_status: "0",
      grpc_message: "OK",
      req_grpc: '{1: "hello", 2: 150, 3: {1: "x"}}',
      resp_grpc: '{1: "hello", 2: 150, 3: {1: "x"}}',
    });
    expect(body(byPath.get("/gzip")!, "resp")).toBe("compressed hello");
    const slow = byPath.get("/slow")!;
    expect(slow.tags.incomplete).toContain("stream reset by the client");
    for (const e of events) expect(e.http_duration).toBeGreaterThanOrEqual(0);
    expect(tracer.stats().parserGaveUp).toBe(0);
    expect(tracer.stats().tapErrors).toBe(0);
  });

  test("the recorded conversation gives the same exchanges under every chunking", () => {
    expect(recorded.length).toBeGreaterThan(2);
    const reference = trace(recorded, { direction: "outbound" }).events.map(summary);
    expect(reference.length).toBe(5);
    const ways = chunkings(recorded.slice(0, 3));
    for (const chunker of ways.slice(0, 40)) {
      const { events: got, tracer: t } = trace(recorded, { direction: "outbound", chunker });
      expect(got.map(summary)).toEqual(reference);
      expect(t.stats().parserGaveUp).toBe(0);
    }
  });

  test("fuzz: mutated HTTP/2 conversations never throw out of the tap and keep exact byte counts", () => {
    const rnd = rng(12345);
    for (let round = 0; round < 300; round++) {
      const segments: Segment[] = recorded.slice(0, 6).map((seg) => {
        if ("end" in seg) return seg;
        const data = new Uint8Array(seg.data as Uint8Array);
        const edits = Math.floor(rnd() * 4);
        for (let i = 0; i < edits; i++) data[Math.floor(rnd() * data.length)] = Math.floor(rnd() * 256);
        return { fromClient: seg.fromClient, data };
      });
      const {
        tracer: t,
        clientBytes,
        serverBytes,
      } = trace(segments, { direction: "outbound", chunker: (n) => [Math.ceil(n / 2), Math.floor(n / 2)].filter((k) => k > 0) });
      const st = t.stats();
      expect(st.tapErrors).toBe(0);
      expect([st.bytesFromClients, st.bytesFromServers]).toEqual([clientBytes, serverBytes]);
    }
  });

  test("h2c reached through an HTTP/1 Upgrade: the 101, then the response on stream 1, under every chunking", () => {
    const frame = (type: number, flags: number, stream: number, payload: Uint8Array) =>
      Buffer.concat([
        Buffer.from([payload.length >> 16, (payload.length >> 8) & 255, payload.length & 255, type, flags, 0, 0, 0, stream]),
        payload,
      ]);
    const text = (s: string) => new TextEncoder().encode(s);
    // :status 200 (static index 8), content-type (index 31, literal without indexing) "text/plain".
    const block = Buffer.concat([Buffer.from([0x88, 0x0f, 0x10, 10]), text("text/plain")]);
    const conversation: Segment[] = [
      {
        fromClient: true,
        data: text(
          "GET /h2c?x=1 HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
        ),
      },
      {
        fromClient: false,
        data: Buffer.concat([
          text("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"),
          frame(4, 0, 0, new Uint8Array(0)),
          frame(1, 4, 1, block),
        ]),
      },
      { fromClient: true, data: Buffer.concat([text("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(4, 0, 0, new Uint8Array(0))]) },
      { fromClient: false, data: frame(0, 1, 1, text("hello h2c")) },
    ];
    const reference = trace(conversation).events;
    expect(reference.map((e) => [e.http_version, e.http_req_path, e.http_resp_status_code, body(e, "resp"), e.tags.upgrade])).toEqual([
      ["1.1", "/h2c?x=1", 101, "", "h2c"],
      ["2", "/h2c?x=1", 200, "hello h2c", undefined],
    ]);
    expect(reference[1]!.http_resp_content_type).toBe("text/plain");
    for (const chunker of chunkings(conversation)) {
      const { events: got, tracer: t } = trace(conversation, { chunker });
      expect(got.map(summary)).toEqual(reference.map(summary));
      expect(t.stats().parserGaveUp).toBe(0);
    }
  });
});

describe("HTTP/2 streams that never got an answer", () => {
  const frame = (type: number, flags: number, stream: number, payload: number[] = []) =>
    new Uint8Array([payload.length >> 16, (payload.length >> 8) & 0xff, payload.length & 0xff, type, flags, 0, 0, 0, stream, ...payload]);
  const preface = new Uint8Array([...Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), ...frame(4, 0, 0)]);
  const settings = frame(4, 0, 0);
  // GET http://h<path> from HPACK's static table, the path a literal: END_STREAM | END_HEADERS.
  const get = (stream: number, path: string) =>
    frame(1, 0x05, stream, [0x82, 0x86, 0x41, 1, 0x68, 0x04, path.length, ...Buffer.from(path)]);
  const respond200 = (stream: number) => frame(1, 0x04, stream, [0x88]);
  const rst = (stream: number, code: number) => frame(3, 0, stream, [0, 0, 0, code]);
  const cancel = 8;
  const open: Segment[] = [
    { fromClient: true, data: preface },
    { fromClient: false, data: settings },
  ];
  const unanswered = (segments: Segment[], closeError?: string) =>
    trace(segments, { closeError })
      .events.map((e) => [e.http_req_path, e.http_resp_status_code, e.http_unanswered, e.http_duration])
      .sort();

  test("a stream the client cancels is given up on then; one the server resets is reset", () => {
    // Each segment is 1000 µs after the last: the requests start at 3000 and 4000.
    const segments: Segment[] = [
      ...open,
      { fromClient: true, data: get(1, "/hang") },
      { fromClient: true, data: get(3, "/refused") },
      { fromClient: false, data: rst(3, 7) },
      { fromClient: true, data: rst(1, cancel) },
    ];
    expect(unanswered(segments)).toEqual([
      ["/hang", 0, "client_aborted", 3000],
      ["/refused", 0, "reset", 1000],
    ]);
  });

  test("the client's FIN gives up its open streams; a stream answering goes on; a close leaves the rest server closed", () => {
    const segments: Segment[] = [
      ...open,
      { fromClient: true, data: get(1, "/answering") },
      { fromClient: false, data: respond200(1) },
      { fromClient: true, data: get(3, "/waiting") },
      { fromClient: true, end: true },
    ];
    expect(unanswered(segments)).toEqual([
      ["/answering", 200, "", 4000],
      ["/waiting", 0, "client_aborted", 1000],
    ]);
    expect(unanswered([...open, { fromClient: true, data: get(1, "/never") }])).toEqual([["/never", 0, "server_closed", 1000]]);
    expect(unanswered([...open, { fromClient: true, data: get(1, "/gone") }], "ECONNRESET")).toEqual([["/gone", 0, "reset", 1000]]);
  });
});
