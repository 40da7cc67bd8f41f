import { describe, expect, test } from "bun:test";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { body, bytewise, c, chunkings, type Segment, s, serverEnd, splitAt, summary, trace } from "./helpers.ts";

/** Runs the conversation under every chunking; all must give the same events. Returns the events. */
function traceAll(segments: Segment[], options: Parameters<typeof trace>[1] = {}): TracedEvent[] {
  const reference = trace(segments, options);
  const expected = reference.events.map(summary);
  for (const chunker of chunkings(segments)) {
    const { events, tracer, clientBytes, serverBytes } = trace(segments, { ...options, chunker });
    expect(events.map(summary)).toEqual(expected);
    const st = tracer.stats();
    expect(st.bytesFromClients).toBe(clientBytes);
    expect(st.bytesFromServers).toBe(serverBytes);
    expect(st.tapErrors).toBe(0);
  }
  return reference.events;
}

const ok = (b: string, extra = "") => `HTTP/1.1 200 OK\r\nContent-Length: ${b.length}\r\n${extra}\r\n${b}`;

describe("HTTP/1 requests and responses", () => {
  test("a simple GET with a Content-Length response", () => {
    const [e, ...rest] = traceAll([c("GET /hello?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n"), s(ok("hi there"))]);
    expect(rest).toHaveLength(0);
    expect(e!.protocol).toBe("http");
    expect(e!.http_version).toBe("1.1");
    expect(e!.http_req_method).toBe("GET");
    expect(e!.http_req_path).toBe("/hello?x=1");
    expect(e!.http_req_host).toBe("example.com");
    expect(e!.http_resp_status_code).toBe(200);
    expect(body(e!, "resp")).toBe("hi there");
    expect(e!.http_resp_body_size_bytes_wire).toBe(8);
    expect(e!.http_resp_content_length).toBe(8);
    expect(e!.http_req_headers).toEqual([
      ["Host", "example.com"],
      ["User-Agent", "t"],
    ]);
    expect(e!.http_is_outgoing).toBe(false);
    expect(e!.process_executable_name).toBe("server");
    expect(e!.service).toBe("server");
  });

  test("every method is HTTP, including PATCH, OPTIONS and custom tokens", () => {
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "MKCOL", "PURGE", "X-CUSTOM_1"]) {
      const { events } = trace([c(`${method} /r HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n`), s(ok("x"))]);
      expect(events.map((e) => [e.protocol, e.http_req_method, e.http_resp_status_code])).toEqual([["http", method, 200]]);
    }
  });

  test("keep-alive: several exchanges on one connection", () => {
    const events = traceAll([
      c("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"),
      s(ok("aaa")),
      c("POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"),
      s(ok("bb")),
      c("DELETE /c HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 204 No Content\r\n\r\n"),
    ]);
    expect(events.map((e) => [e.http_req_method, e.http_req_path, e.http_resp_status_code, body(e, "req"), body(e, "resp")])).toEqual([
      ["GET", "/a", 200, "", "aaa"],
      ["POST", "/b", 200, "hello", "bb"],
      ["DELETE", "/c", 204, "", ""],
    ]);
  });

  test("pipelining: responses answer requests in order", () => {
    const events = traceAll([
      c("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nPUT /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"),
      s(`${ok("one")}${ok("two")}HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nthree`),
    ]);
    expect(events.map((e) => [e.http_req_path, e.http_resp_status_code, body(e, "resp")])).toEqual([
      ["/1", 200, "one"],
      ["/2", 200, "two"],
      ["/3", 201, "three"],
    ]);
    expect(body(events[2]!, "req")).toBe("abc");
  });

  test("chunked bodies with extensions and trailers, both ways", () => {
    const [e] = traceAll([
      c("POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Checksum: abc\r\n\r\n"),
      s(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: grpc-status\r\n\r\nA\r\n0123456789\r\n3\r\nabc\r\n0\r\ngrpc-status: 0\r\n\r\n",
      ),
    ]);
    expect(body(e!, "req")).toBe("Wikipedia");
    expect(e!.http_req_body_size_bytes_wire).toBe(9);
    expect(e!.http_req_transfer_encoding).toBe("chunked");
    expect(body(e!, "resp")).toBe("0123456789abc");
    expect(e!.http_resp_body_size_bytes_wire).toBe(13);
    expect(e!.http_req_headers).toContainEqual(["trailer:X-Checksum", "abc"]);
    expect(e!.http_resp_headers).toContainEqual(["trailer:grpc-status", "0"]);
  });

  test("chunked without trailers, LF-only line endings tolerated", () => {
    const [e] = traceAll([c("GET / HTTP/1.1\nHost: h\n\n"), s("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n")]);
    expect(e!.http_resp_status_code).toBe(200);
    expect(body(e!, "resp")).toBe("ok");
  });

  test("100-continue: the interim response is noted, the final one is the event", () => {
    const events = traceAll([
      c("PUT /file HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"),
      s("HTTP/1.1 100 Continue\r\n\r\n"),
      c("data"),
      s(ok("stored")),
      c("GET /next HTTP/1.1\r\nHost: h\r\n\r\n"),
      s(ok("n")),
    ]);
    expect(events.map((e) => [e.http_req_path, e.http_resp_status_code, e.tags.interim_statuses])).toEqual([
      ["/file", 200, "100"],
      ["/next", 200, undefined],
    ]);
    expect(body(events[0]!, "req")).toBe("data");
    expect(body(events[0]!, "resp")).toBe("stored");
  });

  test("HEAD, 204 and 304 responses have no body even with a Content-Length", () => {
    const events = traceAll([
      c("HEAD /big HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"),
      c("GET /cached HTTP/1.1\r\nHost: h\r\nIf-None-Match: x\r\n\r\n"),
      s("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n"),
      c("POST /noop HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"),
      s("HTTP/1.1 204 No Content\r\n\r\n"),
      c("GET /after HTTP/1.1\r\nHost: h\r\n\r\n"),
      s(ok("fine")),
    ]);
    expect(events.map((e) => [e.http_req_method, e.http_resp_status_code, e.http_resp_body_size_bytes_wire])).toEqual([
      ["HEAD", 200, 0],
      ["GET", 304, 0],
      ["POST", 204, 0],
      ["GET", 200, 4],
    ]);
    expect(events[0]!.http_resp_content_length).toBe(100000);
  });

  test("a close-delimited response ends when the server closes", () => {
    const events = traceAll([
      c("GET /old HTTP/1.0\r\n\r\n"),
      s("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"),
      serverEnd,
    ]);
    expect(events).toHaveLength(1);
    expect(events[0]!.http_version).toBe("1.0");
    expect(body(events[0]!, "resp")).toBe("until the end");
    expect(events[0]!.http_resp_body_size_bytes_wire).toBe(13);
    expect(events[0]!.tags.incomplete).toBeUndefined();
  });

  test("a close-delimited response also ends when the connection just closes", () => {
    const { events } = trace([c("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), s("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody")]);
    expect(events.map((e) => [e.http_resp_status_code, body(e, "resp"), e.tags.incomplete])).toEqual([[200, "body", undefined]]);
  });

  test("a WebSocket upgrade is one HTTP event with status 101; what follows is WebSocket frames, never HTTP", () => {
    const frames = new Uint8Array([0x81, 0x85, 1, 2, 3, 4, 0x69, 0x67, 0x6f, 0x68, 0x6e, 0x0d, 0x0a, 0x0d, 0x0a]);
    const events = traceAll([
      c(
        "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
      ),
      s(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
      ),
      c(frames),
      s(new Uint8Array([0x81, 0x02, 0x68, 0x69])),
      c("GET /not-http HTTP/1.1\r\n\r\n"),
    ]);
    expect(events.filter((e) => e.protocol === "http")).toHaveLength(1);
    expect(events[0]!.http_resp_status_code).toBe(101);
    expect(events[0]!.tags.upgrade).toBe("websocket");
    // The client's "\r\n\r\n" after its frame is no frame (opcode 13 is reserved): the frames stop being followed.
    expect(events.slice(1).map((e) => [e.protocol, e.ws_opcode, e.ws_message])).toEqual([
      ["ws", "text", "hello"],
      ["ws", "close", ""],
    ]);
  });

  test("a refused upgrade keeps the connection HTTP/1, including what the client sent meanwhile", () => {
    const events = traceAll([
      c(
        "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\nGET /second HTTP/1.1\r\nHost: h\r\n\r\n",
      ),
      s(`${ok("first")}${ok("second")}`),
    ]);
    expect(events.map((e) => [e.http_req_path, body(e, "resp")])).toEqual([
      ["/", "first"],
      ["/second", "second"],
    ]);
  });

  test("CONNECT: the handshake is one event lasting as long as the tunnel; the tunnel's bytes pass through", () => {
    const events = traceAll([
      c("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
      s("HTTP/1.1 200 Connection Established\r\n\r\n"),
      c(new Uint8Array([0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5])),
      s(new Uint8Array([0x16, 3, 3, 0, 1, 9])),
    ]);
    expect(events.map((e) => [e.http_req_method, e.http_req_path, e.http_req_host, e.http_resp_status_code, e.tags.tunnel])).toEqual([
      ["CONNECT", "example.com:443", "example.com:443", 200, "closed"],
    ]);
    // Asked at 1.001 s, answered at 1.002 s, closed at 1.005 s (1 ms a step): the tunnel's life, not the answer's.
    expect([events[0]!.timing_wait, events[0]!.http_duration]).toEqual([1000, 4000]);
  });

  test("a refused CONNECT (407) is an event when answered, and the same connection may ask again", () => {
    const events = traceAll([
      c("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
      s("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 4\r\n\r\nauth"),
      c("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\n\r\n"),
    ]);
    expect(events.map((e) => [e.http_req_method, e.http_resp_status_code, e.http_duration, e.tags.tunnel])).toEqual([
      ["CONNECT", 407, 1000, undefined],
      ["CONNECT", 200, 2000, "closed"],
    ]);
  });

  test("obs-fold, duplicate equal Content-Length and stray CRLFs between requests", () => {
    const events = traceAll([
      c("GET /a HTTP/1.1\r\nHost: h\r\nX-Long: one\r\n two\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"),
      c("\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n"),
      s(ok("b")),
    ]);
    expect(events[0]!.http_req_headers).toContainEqual(["X-Long", "one two"]);
    expect(body(events[0]!, "resp")).toBe("ok");
    expect(events[1]!.http_req_path).toBe("/b");
  });

  test("a request the server never answered is reported as incomplete at close", () => {
    const { events } = trace([c("POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345")], { closeError: "reset" });
    expect(events).toHaveLength(1);
    expect(events[0]!.http_resp_status_code).toBe(0);
    expect(events[0]!.http_req_body_size_bytes_wire).toBe(5);
    expect(events[0]!.tags.incomplete).toContain("reset");
  });

  test("absolute-form targets become path and host", () => {
    const [e] = traceAll([c("GET http://proxy.example/a/b?q=1 HTTP/1.1\r\n\r\n"), s(ok("x"))]);
    expect(e!.http_req_path).toBe("/a/b?q=1");
    expect(e!.http_req_host).toBe("proxy.example");
  });
});

describe("bodies", () => {
  const big = "0123456789abcdef".repeat(8192); // 128 KiB

  test("kept up to the payload limit while the wire size is exact", () => {
    const { events } = trace([
      c(`POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: ${big.length}\r\n\r\n${big}`),
      s(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`),
    ]);
    const e = events[0]!;
    expect(e.http_req_body_size_bytes_wire).toBe(big.length);
    expect(e.http_resp_body_size_bytes_wire).toBe(big.length);
    expect(body(e, "req")).toBe(big.slice(0, 64 * 1024));
    expect(body(e, "resp")).toBe(big.slice(0, 64 * 1024));
    expect(e.http_req_body_truncated).toBe(true);
    expect(e.http_resp_body_truncated).toBe(true);
  });

  test("payload limit 0 keeps no body; a custom limit is honoured", () => {
    const conv = [c("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789"), s(ok("abcdef"))];
    const none = trace(conv, { payloadLimit: 0 }).events[0]!;
    expect([none.http_req_body, none.http_resp_body, none.http_req_body_truncated]).toEqual(["", "", true]);
    const four = trace(conv, { payloadLimit: 4 }).events[0]!;
    expect([body(four, "req"), body(four, "resp")]).toEqual(["0123", "abcd"]);
  });

  test("gzip, deflate and br are decoded for display; the wire size stays the compressed size", () => {
    const text = JSON.stringify({ hello: "world", items: Array.from({ length: 50 }, (_, i) => i) });
    for (const [coding, packed] of [
      ["gzip", gzipSync(text)],
      ["deflate", deflateSync(text)],
      ["br", brotliCompressSync(text)],
    ] as const) {
      const head = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: ${coding}\r\nContent-Length: ${packed.length}\r\n\r\n`;
      const [e] = traceAll([c("GET /j HTTP/1.1\r\nHost: h\r\n\r\n"), s(Buffer.concat([Buffer.from(head), packed]))]);
      expect(body(e!, "resp")).toBe(text);
      expect(e!.http_resp_body_size_bytes_wire).toBe(packed.length);
      expect(e!.http_resp_content_encoding).toBe(coding);
      expect(e!.tags.resp_body_decoded).toBe(coding);
    }
  });

  test("a truncated or corrupt compressed body is kept as sent", () => {
    const packed = gzipSync(Buffer.alloc(200_000, 7).map((_, i) => (i * 7919) % 251));
    const head = `HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${packed.length}\r\n\r\n`;
    const { events } = trace([c("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), s(Buffer.concat([Buffer.from(head), packed]))], {
      payloadLimit: 1000,
    });
    expect(events[0]!.tags.resp_body_decoded).toBeUndefined();
    expect(Buffer.from(events[0]!.http_resp_body, "base64").subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const bad = trace([
      c("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope"),
    ]);
    expect(body(bad.events[0]!, "resp")).toBe("nope");
  });
});

describe("timings", () => {
  test("inbound: request receive, processing, response send; duration from first to last byte", () => {
    const { events } = trace(
      [
        c("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n"),
        c("body"),
        s("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"),
        s("done"),
      ],
      { step: 1000 },
    );
    const e = events[0]!;
    expect(e.time).toBe(1_001_000);
    expect([e.timing_connect, e.timing_send, e.timing_wait, e.timing_receive, e.http_duration]).toEqual([-1, 1000, 1000, 1000, 3000]);
  });

  test("outbound: connect only on the first exchange of a connection", () => {
    const { events } = trace([c("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"), s(ok("a")), c("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"), s(ok("b"))], {
      direction: "outbound",
    });
    expect(events.map((e) => [e.http_is_outgoing, e.timing_connect, e.timing_send, e.timing_wait, e.timing_receive])).toEqual([
      [true, 250, 0, 1000, 0],
      [true, -1, 0, 1000, 0],
    ]);
  });
});

describe("sniffing: what is not HTTP/1 is still recorded", () => {
  test("an HTTP/2 connection that breaks its framing is recorded as passthrough", () => {
    const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // A CONTINUATION frame with no header block before it.
    const { events } = trace([c(`${preface}\x00\x00\x00\x09\x04\x00\x00\x00\x01`), s("\x00\x00\x00\x04\x01\x00\x00\x00\x00")]);
    expect(events.map((e) => [e.protocol, e.http_version, e.bytes_sent, e.bytes_received])).toEqual([["tcp", "2", 33, 9]]);
    expect(events[0]!.tags.passthrough).toContain("CONTINUATION");
  });

  test("TLS the relay did not decrypt is recorded as tcp, not decrypted with the reason, and the server name", () => {
    const hello = clientHello("api.example.com");
    const { events } = trace([c(hello), s(new Uint8Array([0x16, 3, 3, 0, 2, 2, 0]))], { direction: "outbound" });
    expect(events.map((e) => [e.protocol, e.tags.tls, e.tags.tls_reason, e.tls_server_name, e.bytes_sent, e.bytes_received])).toEqual([
      ["tcp", "not decrypted", "interception off", "api.example.com", hello.length, 7],
    ]);
    expect(events[0]!.timing_connect).toBe(250);
  });

  test("a ClientHello split across reads still yields its server name", () => {
    const hello = clientHello("split.example.org");
    for (const chunker of [bytewise, splitAt(7), splitAt(hello.length - 1)]) {
      const { events } = trace([c(hello), s(new Uint8Array([0x16, 3, 3, 0, 2, 2, 0]))], { direction: "outbound", chunker });
      expect(events.map((e) => [e.tls_server_name, e.bytes_sent])).toEqual([["split.example.org", hello.length]]);
    }
    // The server answering before the hello is complete ends the wait.
    const cut = trace([c(hello.subarray(0, 20)), s("x")], { direction: "outbound" }).events[0]!;
    expect([cut.tags.tls, cut.tls_server_name]).toEqual(["not decrypted", ""]);
  });

  test("a server that speaks first (a database, SMTP) is passthrough", () => {
    const { events } = trace([s("220 mail.example ESMTP\r\n"), c("EHLO me\r\n"), s("250 ok\r\n")]);
    expect(events.map((e) => [e.protocol, e.tags.reason, e.bytes_sent, e.bytes_received])).toEqual([["tcp", "server spoke first", 9, 32]]);
  });

  test("an unknown binary protocol gives one tcp event with bytes each way and duration", () => {
    const { events } = trace([c(new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47])), s("N"), c(new Uint8Array(100))], { direction: "outbound" });
    const e = events[0]!;
    expect([e.protocol, e.bytes_sent, e.bytes_received, e.http_duration]).toEqual(["tcp", 108, 1, 4000]);
  });

  test("a parser error mid-connection: earlier exchanges kept, the rest recorded as passthrough", () => {
    const { events } = trace([
      c("GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"),
      s(ok("fine")),
      c("GET /bad HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n"),
      s(ok("?")),
    ]);
    expect(events.map((e) => [e.protocol, e.http_req_path, e.http_resp_status_code])).toEqual([
      ["http", "/ok", 200],
      ["tcp", "", 0],
    ]);
    expect(events[1]!.tags.passthrough).toContain("content-length");
  });
});

/** A minimal TLS 1.2 ClientHello with an SNI extension. */
function clientHello(name: string): Uint8Array {
  const n = Buffer.from(name);
  const sni = Buffer.concat([Buffer.from([0, 0]), u16(n.length + 5), u16(n.length + 3), Buffer.from([0]), u16(n.length), n]);
  const exts = Buffer.concat([u16(sni.length), sni]);
  const hello = Buffer.concat([
    Buffer.from([3, 3]),
    Buffer.alloc(32, 1),
    Buffer.from([0]),
    u16(2),
    Buffer.from([0x13, 0x01]),
    Buffer.from([1, 0]),
    exts,
  ]);
  const hs = Buffer.concat([Buffer.from([1, 0]), u16(hello.length), hello]);
  return Buffer.concat([Buffer.from([0x16, 3, 1]), u16(hs.length), hs]);
}

function u16(n: number): Buffer {
  return Buffer.from([n >> 8, n & 255]);
}

describe("Content-Length with Transfer-Encoding: framing that peers may read differently (RFC 9112 6.1)", () => {
  // Read by its chunks, one request whose body holds "GET /admin ..."; read by its length (4 bytes), two requests.
  const smuggling =
    "POST /search HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "2a\r\nGET /admin HTTP/1.1\r\nHost: h\r\nX-Pad: xxxxx\r\n\r\n0\r\n\r\n";

  test("the message is recorded with its answer and marked, then the connection is given up with the reason", () => {
    const events = traceAll([
      c("GET /before HTTP/1.1\r\nHost: h\r\n\r\n"),
      c(smuggling),
      s(ok("a")),
      s(ok("searched")),
      s(ok("admin page")),
    ]);
    expect(events.map((e) => [e.protocol, e.http_req_path, e.http_resp_status_code, e.tags.ambiguous_framing])).toEqual([
      ["http", "/before", 200, undefined],
      ["http", "/search", 200, "request: Content-Length and Transfer-Encoding together (RFC 9112 6.1)"],
      ["tcp", "", 0, undefined],
    ]);
    expect(body(events[1]!, "resp")).toBe("searched");
    expect(events[1]!.http_req_body).toBe("");
    expect(events[2]!.tags.passthrough).toBe("ambiguous framing: request: Content-Length and Transfer-Encoding together (RFC 9112 6.1)");
  });

  test("a response with both: recorded without its body, and nothing after it is parsed", () => {
    const response = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    const events = traceAll([c("GET /x HTTP/1.1\r\nHost: h\r\n\r\nGET /y HTTP/1.1\r\nHost: h\r\n\r\n"), s(response), s(ok("y"))]);
    expect(events.map((e) => [e.protocol, e.http_req_path, e.tags.ambiguous_framing ?? e.tags.passthrough])).toEqual([
      ["http", "/x", "response: Content-Length and Transfer-Encoding together (RFC 9112 6.1)"],
      ["http", "/y", undefined],
      ["tcp", "", "ambiguous framing: response: Content-Length and Transfer-Encoding together (RFC 9112 6.1)"],
    ]);
    expect(events[1]!.tags.incomplete).toStartWith("parser gave up: ambiguous framing");
  });

  test("an ambiguous request whose answer never comes is reported incomplete at close", () => {
    const events = traceAll([c(smuggling)]);
    expect(events.map((e) => [e.protocol, e.http_req_path, e.tags.ambiguous_framing !== undefined, e.tags.incomplete])).toEqual([
      ["http", "/search", true, "connection closed before the response completed"],
    ]);
  });
});

describe("requests that never got an answer", () => {
  const clientEnd: Segment = { fromClient: true, end: true };
  // Each segment is 1000 µs after the last; the close comes 1000 µs after the last segment.
  const unanswered = (events: TracedEvent[]) =>
    events.map((e) => [e.http_req_path, e.http_resp_status_code, e.http_unanswered, e.http_duration, e.timing_wait]);

  test("the client's FIN, then the close without an answer: client aborted, lasting until the FIN", () => {
    const { events } = trace([c("GET /hang HTTP/1.1\r\nHost: h\r\n\r\n"), { fromClient: false, data: "" }, clientEnd]);
    // Sent at 1000, given up at 3000 (the close, at 4000, is not the end).
    expect(unanswered(events)).toEqual([["/hang", 0, "client_aborted", 2000, 2000]]);
  });

  test("the server's FIN without a response: server closed; a close without either: server closed at the close", () => {
    expect(unanswered(trace([c("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), serverEnd]).events)).toEqual([
      ["/a", 0, "server_closed", 1000, 1000],
    ]);
    expect(unanswered(trace([c("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")]).events)).toEqual([["/b", 0, "server_closed", 1000, 1000]]);
  });

  test("a reset: reset; a tracer that stopped following the connection says nothing of an answer", () => {
    expect(unanswered(trace([c("GET /r HTTP/1.1\r\nHost: h\r\n\r\n")], { closeError: "ECONNRESET" }).events)).toEqual([
      ["/r", 0, "reset", 1000, 1000],
    ]);
    const detached = trace([c("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")], { closeError: "tap detached: it failed" }).events;
    expect(detached.map((e) => [e.http_unanswered, e.http_duration])).toEqual([["", 0]]);
  });

  test("a request still being sent when the client gives up ends with it; its bytes so far are counted", () => {
    const { events } = trace([c("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345"), clientEnd]);
    expect(unanswered(events)).toEqual([["/upload", 0, "client_aborted", 1000, 0]]);
    expect(events[0]!.http_req_body_size_bytes_wire).toBe(5);
  });

  test("a client that half-closes after its requests (nc, a shell's pipe) still has them answered", () => {
    const { events } = trace([
      c("GET /first HTTP/1.1\r\nHost: h\r\n\r\nGET /second HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfi"),
      clientEnd,
      s("rs"),
      s(ok("late")),
    ]);
    expect(unanswered(events).sort()).toEqual([
      ["/first", 200, "", 3000, 1000],
      ["/second", 200, "", 4000, 4000],
    ]);
    expect(body(events.find((e) => e.http_req_path === "/second")!, "resp")).toBe("late");
  });

  test("the server's FIN after the client's: the request was given up on at the client's", () => {
    const { events } = trace([c("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), clientEnd, serverEnd]);
    expect(unanswered(events)).toEqual([["/a", 0, "client_aborted", 1000, 1000]]);
  });

  test("an answered request is not marked, and a response cut short is cut short, not unanswered", () => {
    expect(unanswered(traceAll([c("GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"), s(ok("x"))]))).toEqual([["/ok", 200, "", 1000, 1000]]);
    const cut = trace([c("GET /cut HTTP/1.1\r\nHost: h\r\n\r\n"), s("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"), clientEnd]).events;
    expect(cut.map((e) => [e.http_resp_status_code, e.http_unanswered, e.tags.incomplete])).toEqual([
      [200, "", "connection closed before the response completed"],
    ]);
  });
});
