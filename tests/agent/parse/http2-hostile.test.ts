import { describe, expect, test } from "bun:test";
import { c, chunkings, h2, type Segment, s, summary, trace } from "./helpers.ts";

/**
 * HTTP/2 from peers that do not play fair: a client whose server never agreed to HTTP/2, and header blocks that
 * expand (HPACK references to large table entries) far beyond the bytes that carried them.
 */
const get = (path: string) => h2.block(h2.indexed(2), h2.indexed(6), h2.literal(4, path));
const ok = h2.block(h2.indexed(8));

describe("h2c: parsed only once the server answers with its SETTINGS", () => {
  test("a client's preface and 100 requests to a server that answers HTTP/1 are one tcp event, no requests", () => {
    const requests = Array.from({ length: 100 }, (_, i) => h2.headers(2 * i + 1, get(`/fake/${i}`)));
    const { events, tracer } = trace([
      c(Buffer.concat([Buffer.from(h2.preface), h2.settings(), ...requests])),
      s("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    ]);
    expect(events.map((e) => e.protocol)).toEqual(["tcp"]);
    expect(events[0]!.tags.passthrough).toBe("the server did not answer with HTTP/2 SETTINGS");
    expect(tracer.stats().httpEvents).toBe(0);
  });

  test("a server that never answers: what the client sent is held, then recorded as tcp with the reason", () => {
    const { events } = trace([c(Buffer.concat([Buffer.from(h2.preface), h2.settings(), h2.headers(1, get("/x"))]))]);
    expect(events.map((e) => [e.protocol, e.tags.passthrough])).toEqual([["tcp", "the server never answered with HTTP/2 SETTINGS"]]);
  });

  test("what is held before the server answers is bounded", () => {
    const big = Buffer.alloc(200 * 1024, 0x61);
    const { events } = trace([
      c(Buffer.concat([Buffer.from(h2.preface), h2.settings(), h2.headers(1, get("/x"), false), big])),
      s(h2.settings()),
    ]);
    expect(events.map((e) => e.protocol)).toEqual(["tcp"]);
    expect(events[0]!.tags.passthrough).toBe("the client sent over 128 KiB before the server's HTTP/2 SETTINGS");
  });

  test("with the server's SETTINGS first, held requests are parsed before its answers, even in the same read, under every chunking", () => {
    const conversation: Segment[] = [
      c(Buffer.concat([Buffer.from(h2.preface), h2.settings(), h2.headers(1, get("/one")), h2.headers(3, get("/two"))])),
      s(
        Buffer.concat([
          h2.settings(),
          h2.frame(4, 1, 0),
          h2.headers(1, ok, false),
          h2.data(1, "first"),
          h2.headers(3, ok, false),
          h2.data(3, "second"),
        ]),
      ),
    ];
    const reference = trace(conversation).events;
    expect(reference.map((e) => [e.protocol, e.http_req_path, e.http_resp_status_code])).toEqual([
      ["http", "/one", 200],
      ["http", "/two", 200],
    ]);
    for (const chunker of chunkings(conversation).slice(0, 60)) {
      const { events, tracer } = trace(conversation, { chunker });
      expect(events.map(summary)).toEqual(reference.map(summary));
      expect(tracer.stats().parserGaveUp).toBe(0);
    }
  });
});

describe("HPACK expansion bombs", () => {
  const start = [Buffer.from(h2.preface), h2.settings()];

  test("one block of a 100 KB literal and 30,000 one-byte references to it: the connection goes opaque at once", () => {
    const referer = `https://example.com/?${"q".repeat(100 * 1024)}`;
    const block = h2.block(
      h2.sizeUpdate(1024 * 1024),
      [...get("/bomb")],
      h2.indexing(51, referer),
      ...Array.from({ length: 30_000 }, () => h2.indexed(62)),
    );
    const { events, tracer } = trace([c(Buffer.concat(start)), s(h2.settings()), c(h2.headers(1, block))], { redact: "redact" });
    expect(events.map((e) => e.protocol)).toEqual(["tcp"]);
    expect(events[0]!.tags.passthrough).toBe("header list over 64 KiB decoded");
    expect(tracer.stats().parserGaveUp).toBe(1);
  });

  test("many small blocks each referencing a large entry: what they may decode to is bounded by the bytes sent", () => {
    const referer = `https://example.com/?${"r".repeat(8000)}`;
    const first = h2.headers(1, h2.block(h2.sizeUpdate(64 * 1024), [...get("/0")], h2.indexing(51, referer)));
    // 19 bytes on the wire each, about 56 KB of headers decoded.
    const small = Array.from({ length: 500 }, (_, i) =>
      h2.headers(2 * i + 3, h2.block(h2.indexed(2), h2.indexed(6), h2.indexed(4), ...Array(7).fill(h2.indexed(62)))),
    );
    const { events } = trace([c(Buffer.concat([...start, first, ...small])), s(h2.settings())], { redact: "redact" });
    const tcp = events.filter((e) => e.protocol === "tcp");
    expect(tcp.map((e) => e.tags.passthrough)).toEqual(["header blocks decode to over 256 times the bytes the client sent"]);
    // The streams opened before the bound are reported (incomplete); the rest were never decoded.
    const http = events.filter((e) => e.protocol === "http");
    expect(http.length).toBeGreaterThan(5);
    expect(http.length).toBeLessThan(100);
    for (const e of http) expect(e.tags.incomplete).toStartWith("parser gave up");
  });

  test("a long secret sent once and referenced on later requests is redacted in each; the same value under a harmless name is kept", () => {
    const token = "t".repeat(2000);
    const data = "d".repeat(2000);
    const blocks = [
      h2.headers(
        1,
        h2.block(
          h2.sizeUpdate(16 * 1024),
          [...get("/1")],
          h2.indexing("authorization", `Bearer ${token}`),
          h2.indexing("x-data", `Bearer ${token}`),
        ),
      ),
      h2.headers(3, h2.block([...get("/2")], h2.indexed(63), h2.indexed(62))),
      h2.headers(5, h2.block([...get("/3")], h2.indexed(63), h2.indexing("x-other", data))),
    ];
    const answers = [1, 3, 5].map((id) => h2.headers(id, ok));
    const { events } = trace([c(Buffer.concat([...start, ...blocks])), s(Buffer.concat([h2.settings(), ...answers]))], {
      redact: "redact",
    });
    expect(events).toHaveLength(3);
    for (const e of events) expect(e.http_req_headers).toContainEqual(["authorization", "Bearer [redacted]"]);
    expect(events[1]!.http_req_headers).toContainEqual(["x-data", `Bearer ${token}`]);
    expect(events[2]!.http_req_headers).toContainEqual(["x-other", data]);
  });
});

describe("per-event header caps: what the server would keep", () => {
  test("an HTTP/1 request with 300 headers and a 20,000-character value: 256 headers, the value cut with the marker, the rest counted", () => {
    const many = Array.from({ length: 298 }, (_, i) => `X-H-${i}: v${i}\r\n`).join("");
    const head = `GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${"b".repeat(20_000)}\r\n${many}\r\n`;
    const { events } = trace([c(head), s("HTTP/1.1 204 No Content\r\n\r\n")]);
    const headers = events[0]!.http_req_headers;
    expect(headers).toHaveLength(256);
    expect(headers[1]![1]).toHaveLength(8192);
    expect(headers[1]![1]).toEndWith("…[truncated]");
    expect(events[0]!.tags.req_headers_dropped).toBe("44");
  });
});

describe("h2c servers that send their SETTINGS as soon as they accept", () => {
  test("the server's SETTINGS before the client's preface: the connection is still parsed as HTTP/2, under every chunking", () => {
    const conversation: Segment[] = [
      s(h2.settings()),
      c(Buffer.concat([Buffer.from(h2.preface), h2.settings(), h2.headers(1, get("/early"))])),
      s(Buffer.concat([h2.frame(4, 1, 0), h2.headers(1, ok, false), h2.data(1, "hi")])),
    ];
    const reference = trace(conversation).events;
    expect(reference.map((e) => [e.protocol, e.http_req_path, e.http_resp_status_code])).toEqual([["http", "/early", 200]]);
    for (const chunker of chunkings(conversation).slice(0, 40)) {
      expect(trace(conversation, { chunker }).events.map(summary)).toEqual(reference.map(summary));
    }
  });

  test("a server speaking first with anything else, or a client answering it with HTTP/1, is still opaque", () => {
    expect(trace([s("220 smtp ready\r\n"), c("EHLO x\r\n")]).events.map((e) => e.tags.reason)).toEqual(["server spoke first"]);
    expect(trace([s(h2.settings()), c("GET / HTTP/1.1\r\nHost: h\r\n\r\n")]).events.map((e) => e.tags.reason)).toEqual([
      "server spoke first",
    ]);
    expect(trace([s(h2.settings())]).events.map((e) => e.tags.reason)).toEqual(["server spoke first"]);
  });
});
