import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { formatLogLine } from "~/agent/log-line.ts";
import { toHarEntry, toHarLog } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { c, s, trace } from "../agent/parse/helpers.ts";
import { tracedEvent } from "../support/event-factory.ts";

type Leaf = "string" | "number" | "boolean" | "array" | "object";
type Shape = Leaf | `${Leaf}?` | { [key: string]: Shape } | [Shape];

/** The HAR 1.2 field list (required fields; "?" marks optional ones we emit). */
const nameValue: Shape = { name: "string", value: "string" };
const cookie: Shape = { name: "string", value: "string" };
const entryShape: Shape = {
  startedDateTime: "string",
  time: "number",
  request: {
    method: "string",
    url: "string",
    httpVersion: "string",
    cookies: [cookie],
    headers: [nameValue],
    queryString: [nameValue],
    headersSize: "number",
    bodySize: "number",
  },
  response: {
    status: "number",
    statusText: "string",
    httpVersion: "string",
    cookies: [cookie],
    headers: [nameValue],
    content: { size: "number", mimeType: "string" },
    redirectURL: "string",
    headersSize: "number",
    bodySize: "number",
  },
  cache: "object",
  timings: { send: "number", wait: "number", receive: "number", blocked: "number?", dns: "number?", connect: "number?", ssl: "number?" },
  serverIPAddress: "string?",
};

function check(value: unknown, shape: Shape, path: string): string[] {
  if (typeof shape === "string") {
    const isOptional = shape.endsWith("?");
    const type = shape.replace("?", "");
    if (value === undefined) return isOptional ? [] : [`${path}: missing`];
    const actual = Array.isArray(value) ? "array" : typeof value;
    return actual === type ? [] : [`${path}: ${actual}, want ${type}`];
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [`${path}: not an array`];
    return value.flatMap((v, i) => check(v, shape[0]!, `${path}[${i}]`));
  }
  if (typeof value !== "object" || value === null) return [`${path}: not an object`];
  return Object.entries(shape).flatMap(([k, sub]) => check((value as Record<string, unknown>)[k], sub, `${path}.${k}`));
}

function sampleEvents(): TracedEvent[] {
  const json = JSON.stringify({ ok: true, n: 1 });
  const packed = gzipSync(json);
  return trace(
    [
      c(
        'POST /api/items?page=2&q=a%20b HTTP/1.1\r\nHost: api.test\r\nCookie: a=1; b=2\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"x": 1}\n',
      ),
      s(
        Buffer.concat([
          Buffer.from(
            `HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nSet-Cookie: sid=abc; Path=/; HttpOnly; Secure\r\nContent-Length: ${packed.length}\r\n\r\n`,
          ),
          packed,
        ]),
      ),
      c("GET /img HTTP/1.1\r\nHost: api.test\r\n\r\n"),
      s(
        Buffer.concat([
          Buffer.from("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 6\r\n\r\n"),
          Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1]),
        ]),
      ),
    ],
    { direction: "outbound" },
  ).events;
}

describe("HAR 1.2", () => {
  test("entries have every field of the HAR 1.2 field list, with the right types", () => {
    const log = toHarLog(sampleEvents());
    expect(log.log.version).toBe("1.2");
    expect(log.log.creator.name).toBe("tapscope");
    expect(log.log.entries).toHaveLength(2);
    for (const entry of log.log.entries) expect(check(entry, entryShape, "entry")).toEqual([]);
  });

  test("a decrypted exchange: https URL, the TLS handshake as HAR's ssl, included in connect as HAR 1.2 says", () => {
    const e = tracedEvent({
      time: 1_700_000_000_000_000,
      http_is_outgoing: true,
      http_req_host: "api.example.com",
      http_req_path: "/v1/charges?limit=3",
      tls_server_name: "api.example.com",
      timing_connect: 1_500,
      timing_tls: 12_345,
      timing_send: 100,
      timing_wait: 20_000,
      timing_receive: 400,
      tags: { tls: "decrypted", tls_alpn: "h2" },
    });
    const entry = toHarEntry(e);
    expect(entry.request.url).toBe("https://api.example.com/v1/charges?limit=3");
    expect(entry.timings).toEqual({ blocked: -1, dns: -1, connect: 13.845, send: 0.1, wait: 20, receive: 0.4, ssl: 12.345 });
    expect(entry.time).toBe(34.345);
    expect(new Date(entry.startedDateTime).getTime()).toBe(1_700_000_000_000 - 14);

    // A plaintext exchange to a host that has a server name elsewhere stays http; a later exchange on the
    // connection has no connect or TLS time.
    const plain = toHarEntry({ ...e, tags: {}, timing_tls: -1, timing_connect: -1 });
    expect(plain.request.url).toBe("http://api.example.com/v1/charges?limit=3");
    expect(plain.timings.ssl).toBe(-1);
    expect(plain.timings.connect).toBe(-1);
    const reused = toHarEntry({ ...e, timing_tls: -1, timing_connect: -1 });
    expect(reused.request.url).toBe("https://api.example.com/v1/charges?limit=3");
    expect([reused.timings.connect, reused.timings.ssl]).toEqual([-1, -1]);
  });

  test("request, response, bodies and timings are carried over", () => {
    const [post, img] = sampleEvents();
    const entry = toHarEntry(post!);
    expect(entry.request.method).toBe("POST");
    expect(entry.request.url).toBe("http://api.test/api/items?page=2&q=a%20b");
    expect(entry.request.httpVersion).toBe("HTTP/1.1");
    expect(entry.request.queryString).toEqual([
      { name: "page", value: "2" },
      { name: "q", value: "a b" },
    ]);
    expect(entry.request.cookies).toEqual([
      { name: "a", value: "1" },
      { name: "b", value: "2" },
    ]);
    expect(entry.request.postData).toEqual({ mimeType: "application/json", text: '{"x": 1}\n' });
    expect(entry.request.bodySize).toBe(9);
    expect(entry.response.status).toBe(201);
    expect(entry.response.statusText).toBe("Created");
    expect(entry.response.content.text).toBe(JSON.stringify({ ok: true, n: 1 }));
    expect(entry.response.content.size).toBe(JSON.stringify({ ok: true, n: 1 }).length);
    expect(entry.response.bodySize).toBe(post!.http_resp_body_size_bytes_wire);
    expect(entry.response.cookies[0]).toEqual({ name: "sid", value: "abc", path: "/", httpOnly: true, secure: true });
    expect(entry.timings).toEqual({ blocked: -1, dns: -1, connect: 0.25, send: 0, wait: 1, receive: 0, ssl: -1 });
    expect(entry.time).toBe(1.25);
    expect(entry.serverIPAddress).toBe("127.0.0.1");
    expect(new Date(entry.startedDateTime).getTime()).toBe(Math.floor((post!.time - 250) / 1000));
    expect(entry._isOutgoing).toBe(true);

    const image = toHarEntry(img!);
    expect(image.response.content.encoding).toBe("base64");
    expect(Buffer.from(image.response.content.text!, "base64")).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1]));
    expect(image.request.postData).toBeUndefined();
    expect(image.timings.connect).toBe(-1);
  });

  test("a request that got no answer: status 0, its wait as the time, why in _unanswered and the comment", () => {
    const { events } = trace([c("GET /hang HTTP/1.1\r\nHost: h\r\n\r\n"), { fromClient: true, end: true }], { direction: "inbound" });
    const entry = toHarEntry(events[0]!);
    expect([entry.response.status, entry.time, entry._unanswered, entry.comment]).toEqual([
      0,
      1,
      "client_aborted",
      "connection closed before the response completed",
    ]);
    expect(toHarEntry(tracedEvent())._unanswered).toBeUndefined();
  });

  test("tcp connections are left out of a HAR log", () => {
    const { events } = trace([c(new Uint8Array([0, 1, 2, 3])), s("x")]);
    expect(toHarLog(events).log.entries).toEqual([]);
  });
});

describe("--log lines", () => {
  test("time, status, method, path and query, duration; outbound calls get an arrow and their host", () => {
    const [post] = sampleEvents();
    const line = formatLogLine(post!);
    expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} →201 POST api\.test\/api\/items\?page=2&q=a%20b\s+1\.0ms$/);
    const inbound = trace([c("GET /health?full=1 HTTP/1.1\r\nHost: h\r\n\r\n"), s("HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n")])
      .events[0]!;
    expect(formatLogLine(inbound)).toMatch(/^\d\d:\d\d:\d\d\.\d{3} {2}503 GET {2}\/health\?full=1\s+1\.0ms$/);
  });

  test("control characters from the wire never reach the terminal", () => {
    const e = trace([c("GET /a\x1b[2Jb HTTP/1.1\r\nHost: h\r\n\r\n"), s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]).events[0]!;
    expect(formatLogLine(e)).not.toContain("\x1b");
    expect(formatLogLine(e)).toContain("/a\\x1b[2Jb");
  });
});
