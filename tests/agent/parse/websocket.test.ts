import { describe, expect, test } from "bun:test";
import { constants, createDeflateRaw, type DeflateRaw } from "node:zlib";
import { Opcode } from "~/agent/parse/websocket.ts";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { bytes, c, chunkings, connection, fakeProcess, h2, host, randomChunker, type Segment, s, trace, ws } from "./helpers.ts";

/** What a WebSocket message event says, in a form to compare across chunkings. */
function message(e: TracedEvent) {
  return {
    dir: e.ws_direction,
    op: e.ws_opcode,
    text: e.ws_message,
    payload: Buffer.from(e.ws_payload, "base64").toString("latin1"),
    size: e.ws_size,
    wire: e.ws_wire_size,
    compressed: e.ws_is_compressed,
    cut: e.ws_payload_truncated,
    code: e.ws_close_code,
  };
}

const messages = (events: TracedEvent[]) => events.filter((e) => e.protocol === "ws");
const handshake = [c(ws.request()), s(ws.response())];

/** A sender's permessage-deflate compressor (one zlib stream, flushed per message): what `ws` and browsers do. */
function compressor(windowBits = 15): { compress(text: string | Uint8Array): Promise<Buffer>; reset(): void } {
  let stream: DeflateRaw = createDeflateRaw({ windowBits });
  return {
    compress: (text) =>
      new Promise((resolve) => {
        const out: Buffer[] = [];
        const onData = (d: Buffer) => out.push(d);
        stream.on("data", onData);
        stream.write(bytes(text));
        stream.flush(constants.Z_SYNC_FLUSH, () => {
          stream.off("data", onData);
          const all = Buffer.concat(out);
          // RFC 7692 7.2.1: the flush's empty block (00 00 ff ff) is left off the wire.
          resolve(all.subarray(0, all.length - 4));
        });
      }),
    reset() {
      stream.close();
      stream = createDeflateRaw({ windowBits });
    },
  };
}

describe("WebSocket messages after an HTTP/1.1 upgrade", () => {
  const conversation: Segment[] = [
    ...handshake,
    c(ws.client(Opcode.Text, "hello")),
    s(ws.frame(Opcode.Text, "hi there")),
    c(ws.client(Opcode.Binary, new Uint8Array([0, 1, 2, 255]))),
    c(ws.client(Opcode.Ping, "p1")),
    s(ws.frame(Opcode.Pong, "p1")),
    // A fragmented message with a ping between its fragments (RFC 6455 5.4).
    s(ws.frame(Opcode.Text, "frag", { fin: false })),
    s(ws.frame(Opcode.Continuation, "men", { fin: false })),
    s(ws.frame(Opcode.Ping, "")),
    s(ws.frame(Opcode.Continuation, "ted")),
    c(ws.client(Opcode.Close, ws.close(1000, "bye"))),
    s(ws.frame(Opcode.Close, ws.close(1000, "bye"))),
  ];

  test("one event per message both ways, the handshake as parent, the close with the totals, under every chunking", () => {
    const reference = trace(conversation);
    const [upgrade, ...rest] = reference.events;
    expect(upgrade!.http_resp_status_code).toBe(101);
    expect(rest.every((e) => e.protocol === "ws" && e.parent_event_id === upgrade!.event_id)).toBe(true);
    expect(rest.map(message)).toEqual([
      { dir: "client", op: "text", text: "hello", payload: "", size: 5, wire: 11, compressed: false, cut: false, code: -1 },
      { dir: "server", op: "text", text: "hi there", payload: "", size: 8, wire: 10, compressed: false, cut: false, code: -1 },
      { dir: "client", op: "binary", text: "", payload: "\x00\x01\x02\xff", size: 4, wire: 10, compressed: false, cut: false, code: -1 },
      { dir: "client", op: "ping", text: "", payload: "p1", size: 2, wire: 8, compressed: false, cut: false, code: -1 },
      { dir: "server", op: "pong", text: "", payload: "p1", size: 2, wire: 4, compressed: false, cut: false, code: -1 },
      { dir: "server", op: "ping", text: "", payload: "", size: 0, wire: 2, compressed: false, cut: false, code: -1 },
      { dir: "server", op: "text", text: "fragmented", payload: "", size: 10, wire: 16, compressed: false, cut: false, code: -1 },
      { dir: "client", op: "close", text: "bye", payload: "", size: 5, wire: 11, compressed: false, cut: false, code: 1000 },
      { dir: "server", op: "close", text: "bye", payload: "", size: 5, wire: 7, compressed: false, cut: false, code: 1000 },
    ]);
    const last = rest.at(-1)!;
    expect([last.ws_client_messages, last.ws_server_messages, last.ws_dropped]).toEqual([4, 5, 0]);
    const frameBytes = (from: boolean) =>
      conversation.slice(2).reduce((n, seg) => n + (seg.fromClient === from && "data" in seg ? bytes(seg.data).length : 0), 0);
    expect([last.bytes_sent, last.bytes_received]).toEqual([frameBytes(true), frameBytes(false)]);
    expect(last.tags.ws_ending).toBeUndefined();
    // Only the connection's last event carries totals.
    expect(rest.slice(0, -1).every((e) => e.ws_client_messages === 0 && e.ws_server_messages === 0)).toBe(true);

    for (const chunker of chunkings(conversation)) {
      const { events } = trace(conversation, { chunker });
      expect(messages(events).map(message)).toEqual(rest.map(message));
    }
  });

  test("frames the client sent before the 101 arrived, and frames in the 101's own read, are messages too", () => {
    const { events } = trace([
      c(Buffer.concat([bytes(ws.request()), ws.client(Opcode.Text, "early")])),
      s(Buffer.concat([bytes(ws.response()), ws.frame(Opcode.Text, "welcome")])),
    ]);
    expect(messages(events).map((e) => [e.ws_direction, e.ws_opcode, e.ws_message])).toEqual([
      ["client", "text", "early"],
      ["server", "text", "welcome"],
      ["", "close", ""],
    ]);
  });

  test("a connection that ends without a close frame gets one made up: 1006, with the totals and how it ended", () => {
    const { events } = trace([...handshake, c(ws.client(Opcode.Text, "a")), s(ws.frame(Opcode.Text, "b", { fin: false }))], {
      closeError: "ECONNRESET",
    });
    const last = messages(events).at(-1)!;
    expect([last.ws_direction, last.ws_opcode, last.ws_close_code, last.tags.ws_ending]).toEqual([
      "",
      "close",
      1006,
      "connection closed: ECONNRESET",
    ]);
    expect([last.ws_client_messages, last.ws_server_messages]).toEqual([1, 0]);
  });

  test("payloads are cut to the payload limit and say so; text is cut on a character boundary", () => {
    const { events } = trace([...handshake, c(ws.client(Opcode.Text, Buffer.from("ééééé"))), s(ws.frame(Opcode.Binary, "0123456789"))], {
      payloadLimit: 5,
    });
    const [text, binary] = messages(events).map(message);
    expect(text).toMatchObject({ text: "éé", size: 10, cut: true });
    expect(binary).toMatchObject({ payload: "01234", size: 10, cut: true });
  });

  test("JSON text is redacted by the name rule, as bodies are", () => {
    const secret = '{"op":"auth","password":"hunter2","user":"ann"}';
    const redacted = trace([...handshake, c(ws.client(Opcode.Text, secret))], { redact: "redact" });
    expect(messages(redacted.events)[0]!.ws_message).toBe('{"op":"auth","password":"[redacted]","user":"ann"}');
    const kept = trace([...handshake, c(ws.client(Opcode.Text, secret))], { redact: "keep" });
    expect(messages(kept.events)[0]!.ws_message).toBe(secret);
  });

  test("a refused upgrade stays HTTP/1 and has no messages", () => {
    const { events } = trace([
      c(ws.request()),
      s("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
      c("GET /next HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    ]);
    expect(events.map((e) => [e.protocol, e.http_req_path, e.http_resp_status_code])).toEqual([
      ["http", "/chat", 400],
      ["http", "/next", 200],
    ]);
  });
});

describe("permessage-deflate", () => {
  test("with context takeover both ways: every message inflated, the window kept across messages, under every chunking", async () => {
    const client = compressor();
    const server = compressor();
    // The last two: one near deflate's own ratio (about 1000:1), and one that needs the window it left.
    const texts = [
      '{"type":"quote","symbol":"ACME","price":101.5}',
      '{"type":"quote","symbol":"ACME","price":101.75}',
      "a".repeat(300_000),
      `${"a".repeat(3000)}!`,
    ];
    const segments: Segment[] = [c(ws.request("permessage-deflate; client_max_window_bits")), s(ws.response("permessage-deflate"))];
    for (const text of texts) {
      segments.push(c(ws.client(Opcode.Text, await client.compress(text), { rsv1: true })));
      segments.push(s(ws.frame(Opcode.Text, await server.compress(text), { rsv1: true })));
    }
    const reference = messages(trace(segments, { payloadLimit: 1024 * 1024 }).events);
    expect(reference.slice(0, -1).map((e) => [e.ws_direction, e.ws_message, e.ws_size, e.ws_is_compressed])).toEqual(
      texts.flatMap((t) => [
        ["client", t, t.length, true],
        ["server", t, t.length, true],
      ]),
    );
    // The second quote is mostly a reference to the first: far fewer bytes on the wire than it inflates to.
    expect(reference[2]!.ws_wire_size).toBeLessThan(texts[1]!.length / 2);
    for (const chunker of [...chunkings(segments.slice(0, 4)).slice(0, 40), randomChunker(3)]) {
      expect(messages(trace(segments, { chunker, payloadLimit: 1024 * 1024 }).events).map(message)).toEqual(reference.map(message));
    }
  });

  test("no context takeover and smaller windows, as negotiated", async () => {
    const client = compressor(9);
    const server = compressor(10);
    const segments: Segment[] = [
      c(ws.request("permessage-deflate; client_max_window_bits")),
      s(
        ws.response(
          "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=9",
        ),
      ),
    ];
    const texts = ["x".repeat(3000), "y".repeat(300) + "x".repeat(3000), "tail"];
    for (const text of texts) {
      segments.push(c(ws.client(Opcode.Text, await client.compress(text), { rsv1: true })));
      client.reset();
      segments.push(s(ws.frame(Opcode.Text, await server.compress(text), { rsv1: true })));
      server.reset();
    }
    expect(
      messages(trace(segments).events)
        .slice(0, -1)
        .map((e) => e.ws_message),
    ).toEqual(texts.flatMap((t) => [t, t]));
  });

  test("a compressed message split over continuation frames, with a ping between them", async () => {
    const server = compressor();
    const text = JSON.stringify({ rows: Array.from({ length: 50 }, (_, i) => ({ id: i, name: `row ${i}` })) });
    const packed = await server.compress(text);
    const third = Math.floor(packed.length / 3);
    const { events } = trace([
      c(ws.request("permessage-deflate")),
      s(ws.response("permessage-deflate")),
      s(ws.frame(Opcode.Text, packed.subarray(0, third), { fin: false, rsv1: true })),
      s(ws.frame(Opcode.Ping, "keepalive")),
      s(ws.frame(Opcode.Continuation, packed.subarray(third, 2 * third), { fin: false })),
      s(ws.frame(Opcode.Continuation, packed.subarray(2 * third))),
    ]);
    expect(messages(events).map((e) => [e.ws_opcode, e.ws_opcode === "text" ? e.ws_message : ""])).toEqual([
      ["ping", ""],
      ["text", text],
      ["close", ""],
    ]);
  });

  test("a compressed frame without the extension negotiated stops the parsing, and the last event says why", () => {
    const { events } = trace([...handshake, c(ws.client(Opcode.Text, "plain")), c(ws.client(Opcode.Text, "zz", { rsv1: true }))]);
    const list = messages(events);
    expect(list.map((e) => e.ws_message)).toEqual(["plain", ""]);
    expect(list.at(-1)!.tags.ws_ending).toBe("frames not followed after client: a compressed frame without permessage-deflate");
  });

  test("an extension the tracer cannot read: the handshake is kept, the frames are not followed", () => {
    const { events } = trace([
      c(ws.request("x-webkit-deflate-frame")),
      s(ws.response("x-webkit-deflate-frame")),
      c(ws.client(Opcode.Text, "zz", { rsv1: true })),
    ]);
    expect(events[0]!.http_resp_status_code).toBe(101);
    expect(messages(events).map((e) => [e.ws_opcode, e.tags.ws_ending])).toEqual([
      ["close", "frames not followed after the extension x-webkit-deflate-frame, which the tracer cannot read"],
    ]);
  });
});

describe("the per-connection message budget", () => {
  test("messages over it are counted, not recorded; compressed ones are still inflated so later ones stay readable", async () => {
    const server = compressor();
    const segments: Segment[] = [c(ws.request("permessage-deflate")), s(ws.response("permessage-deflate"))];
    for (let i = 0; i < 30; i++)
      segments.push(s(ws.frame(Opcode.Text, await server.compress(`{"seq":${i},"data":"same same same"}`), { rsv1: true })));
    const events: TracedEvent[] = [];
    const tracer = createTracer({
      onEvent: (e) => events.push(toTracedEvent(e)),
      host,
      processInfo: fakeProcess,
      webSocketMessageRate: 1,
    });
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    let at = 1_000_000;
    for (const seg of segments) if ("data" in seg) tap.onData(seg.fromClient, bytes(seg.data), at++);
    // Ten seconds later the budget has refilled: the next message is recorded, and reads right.
    tap.onData(false, ws.frame(Opcode.Text, await server.compress('{"seq":30,"data":"same same same"}'), { rsv1: true }), at + 10_000_000);
    tap.onClose(at + 10_000_001);
    tracer.flush();
    const list = messages(events);
    // The burst is ten seconds' worth of the rate.
    expect(list.map((e) => e.ws_message).slice(0, -1)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `{"seq":${i},"data":"same same same"}`),
      '{"seq":30,"data":"same same same"}',
    ]);
    expect([list.at(-1)!.ws_server_messages, list.at(-1)!.ws_dropped]).toEqual([31, 20]);
    expect(tracer.stats().webSocketDropped).toBe(20);
  });
});

describe("WebSocket over HTTP/2 (RFC 8441)", () => {
  test("an extended CONNECT answered 200: the handshake event, then its stream's DATA as frames", () => {
    const request = h2.block(
      h2.literal(2, "CONNECT"),
      h2.literal(":protocol", "websocket"),
      h2.literal(7, "http"),
      h2.literal(4, "/chat"),
      h2.literal(1, "h"),
    );
    const { events } = trace([
      c(Buffer.concat([Buffer.from(h2.preface), h2.settings()])),
      s(h2.settings()),
      c(h2.headers(1, request, false)),
      s(h2.headers(1, h2.block(h2.indexed(8)), false)),
      c(h2.data(1, ws.client(Opcode.Text, "over h2"), false)),
      s(h2.data(1, ws.frame(Opcode.Text, "back"), false)),
      c(h2.data(1, ws.client(Opcode.Close, ws.close(1000)), true)),
      s(h2.data(1, ws.frame(Opcode.Close, ws.close(1000)), true)),
    ]);
    const [connect, ...rest] = events;
    expect([connect!.http_req_method, connect!.http_req_path, connect!.http_resp_status_code, connect!.tags.upgrade]).toEqual([
      "CONNECT",
      "/chat",
      200,
      "websocket",
    ]);
    expect(
      rest.map((e) => [
        e.protocol,
        e.http_version,
        e.ws_direction,
        e.ws_opcode,
        e.ws_message,
        e.ws_close_code,
        e.parent_event_id === connect!.event_id,
      ]),
    ).toEqual([
      ["ws", "2", "client", "text", "over h2", -1, true],
      ["ws", "2", "server", "text", "back", -1, true],
      ["ws", "2", "client", "close", "", 1000, true],
      ["ws", "2", "server", "close", "", 1000, true],
    ]);
    expect(rest.at(-1)!.ws_client_messages).toBe(2);
  });
});

describe("hostile peers: nothing a peer sends makes the parser hold unbounded memory", () => {
  const opening = [bytes(ws.request("permessage-deflate")), bytes(ws.response("permessage-deflate"))];
  const upgraded = (tap: { onData(fromClient: boolean, chunk: Uint8Array, at: number): void }) => {
    tap.onData(true, opening[0]!, 1);
    tap.onData(false, opening[1]!, 2);
  };
  const MiB = 1024 * 1024;
  const junk = () => crypto.getRandomValues(new Uint8Array(64 * 1024));

  test("a frame claiming 2^62 bytes, then 256 MiB of it: bytes are counted, at most the payload limit is kept", () => {
    const events: TracedEvent[] = [];
    const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess });
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    upgraded(tap);
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    tap.onData(true, ws.frame(Opcode.Binary, "", { mask: true, length: 2n ** 62n }), 3);
    for (let sent = 0; sent < 256 * MiB; sent += 64 * 1024) tap.onData(true, junk(), 4);
    Bun.gc(true);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * MiB);
    tap.onClose(5);
    tracer.flush();
    const last = messages(events).at(-1)!;
    expect([last.ws_close_code, last.tags.ws_ending]).toEqual([1006, "connection closed in the middle of a message"]);
    expect(last.bytes_sent).toBeGreaterThan(256 * MiB);
  }, 60_000);

  test("a 64-bit length with its top bit set (2^63 and up) stops the parsing, not the bytes' counting", () => {
    const { events } = trace([
      ...handshake,
      c(ws.client(Opcode.Text, "before")),
      c(ws.frame(Opcode.Binary, "", { mask: true, length: 2n ** 63n })),
      c("x".repeat(1000)),
    ]);
    const list = messages(events);
    expect(list.map((e) => e.ws_message)).toEqual(["before", ""]);
    expect(list.at(-1)!.tags.ws_ending).toBe("frames not followed after client: a 64-bit frame length with its top bit set");
    expect(list.at(-1)!.bytes_sent).toBe(ws.client(Opcode.Text, "before").length + 14 + 1000);
  });

  test("an endless fragmented message (256 MiB of continuation frames, plain and compressed) keeps memory bounded", () => {
    for (const rsv1 of [false, true]) {
      let isFirst = true;
      const frame = () => {
        const f = ws.frame(isFirst ? Opcode.Binary : Opcode.Continuation, junk(), { mask: true, fin: false, rsv1: rsv1 && isFirst });
        isFirst = false;
        return f;
      };
      const tracer = createTracer({ onEvent: () => {}, host, processInfo: fakeProcess });
      const tap = tracer.onOpen(connection(1, "inbound"))!;
      upgraded(tap);
      Bun.gc(true);
      const before = process.memoryUsage().rss;
      for (let sent = 0; sent < 256 * MiB; sent += 64 * 1024) tap.onData(true, frame(), 3);
      Bun.gc(true);
      expect(process.memoryUsage().rss - before).toBeLessThan(64 * MiB);
      tap.onClose(4);
    }
  }, 120_000);

  test("a deflate bomb stays compressed past 8 MiB, in time of the order of an ordinary message of its size", async () => {
    const bomb = compressor();
    const packed = await bomb.compress(new Uint8Array(200 * MiB));
    const ordinary = crypto.getRandomValues(new Uint8Array(packed.length));
    const run = (payload: Uint8Array, rsv1: boolean) => {
      const events: TracedEvent[] = [];
      const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess });
      const tap = tracer.onOpen(connection(1, "inbound"))!;
      upgraded(tap);
      const started = performance.now();
      tap.onData(false, ws.frame(Opcode.Binary, payload, { rsv1 }), 3);
      const took = performance.now() - started;
      tap.onData(false, ws.frame(Opcode.Text, "after"), 4);
      tap.onClose(5);
      tracer.flush();
      return { took, list: messages(events) };
    };
    const baseline = Math.min(...[1, 2, 3].map(() => run(ordinary, false).took));
    const { took, list } = run(packed, true);
    expect(list[0]!.ws_size).toBe(-1);
    expect(list[0]!.tags.ws_not_inflated).toStartWith(`inflates to over ${8 * MiB} bytes`);
    expect(list[0]!.tags.ws_not_inflated).toEndWith("later compressed messages this way cannot be read");
    // The next message was not compressed: it reads as ever.
    expect(list[1]!.ws_message).toBe("after");
    // Inflating stops at the bound: not 200 MiB of work.
    expect(took).toBeLessThan(baseline * 20 + 50);
    await bomb.compress("");
  }, 60_000);

  test("frames that break RFC 6455 stop the parsing with the rule they broke", () => {
    const cases: Array<[Uint8Array, string]> = [
      [ws.client(Opcode.Ping, "x".repeat(126)), "a control frame over 125 bytes"],
      [ws.client(Opcode.Ping, "x", { fin: false }), "a fragmented control frame"],
      [ws.client(3, "x"), "reserved opcode 3"],
      [ws.client(11, "x"), "reserved opcode 11"],
      [ws.client(Opcode.Continuation, "x"), "a continuation frame outside a message"],
      [
        Buffer.concat([ws.client(Opcode.Text, "a", { fin: false }), ws.client(Opcode.Text, "b")]),
        "a new message before the last one ended",
      ],
      [Buffer.from([0xa1, 0x80, 0, 0, 0, 0]), "RSV2 or RSV3 set without an extension that uses them"],
    ];
    for (const [frame, rule] of cases) {
      const { events } = trace([...handshake, c(frame), c(ws.client(Opcode.Text, "not read"))]);
      const list = messages(events);
      expect(list.map((e) => e.ws_opcode)).toEqual(["close"]);
      expect(list[0]!.tags.ws_ending).toBe(`frames not followed after client: ${rule}`);
    }
  });
});
