import { describe, expect, test } from "bun:test";
import { createTracer } from "~/agent/tracer.ts";
import { type CapturedEvent, type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { type PendingRequest, pendingLimits } from "~/lib/protocol/pending.ts";
import { bytes, connection, fakeProcess, host } from "./parse/helpers.ts";

function setup(redact: "redact" | "hash" | "keep" = "redact") {
  const events: TracedEvent[] = [];
  const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess, redact });
  return { events, tracer };
}

describe("parent ids: outbound calls made while an inbound request is in flight", () => {
  test("carry the inbound request's event id; the most recent one when several are in flight; none for other processes", () => {
    const { events, tracer } = setup();
    const in1 = tracer.onOpen(connection(1, "inbound", 7))!;
    const in2 = tracer.onOpen(connection(2, "inbound", 7))!;
    in1.onData(true, bytes("GET /first HTTP/1.1\r\nHost: h\r\n\r\n"), 10);
    in2.onData(true, bytes("GET /second HTTP/1.1\r\nHost: h\r\n\r\n"), 20);

    const out1 = tracer.onOpen(connection(3, "outbound", 7))!;
    out1.onData(true, bytes("GET /db HTTP/1.1\r\nHost: db\r\n\r\n"), 30);
    out1.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 40);
    const other = tracer.onOpen(connection(4, "outbound", 8))!;
    other.onData(true, bytes("GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n"), 41);
    other.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 42);
    // The second inbound request finishes; later calls belong to the first one.
    in2.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 50);
    out1.onData(true, bytes("GET /cache HTTP/1.1\r\nHost: db\r\n\r\n"), 60);
    out1.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 70);
    in1.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 80);
    // Nothing in flight any more.
    out1.onData(true, bytes("GET /background HTTP/1.1\r\nHost: db\r\n\r\n"), 90);
    out1.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 95);
    for (const tap of [in1, in2, out1, other]) tap.onClose(100);
    tracer.flush();

    const byPath = new Map(events.map((e) => [e.http_req_path, e]));
    expect(byPath.get("/db")!.parent_event_id).toBe(byPath.get("/second")!.event_id);
    expect(byPath.get("/cache")!.parent_event_id).toBe(byPath.get("/first")!.event_id);
    expect(byPath.get("/elsewhere")!.parent_event_id).toBe("");
    expect(byPath.get("/background")!.parent_event_id).toBe("");
    expect(byPath.get("/first")!.parent_event_id).toBe("");
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
  });

  test("a non-HTTP outbound connection opened during a request is parented too", () => {
    const { events, tracer } = setup();
    const inbound = tracer.onOpen(connection(1, "inbound", 7))!;
    inbound.onData(true, bytes("GET /users HTTP/1.1\r\nHost: h\r\n\r\n"), 10);
    const pg = tracer.onOpen(connection(2, "outbound", 7))!;
    pg.onData(true, new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]), 20);
    pg.onClose(30);
    inbound.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 40);
    inbound.onClose(50);
    tracer.flush();
    const tcp = events.find((e) => e.protocol === "tcp")!;
    expect(tcp.parent_event_id).toBe(events.find((e) => e.protocol === "http")!.event_id);
  });

  test("a CONNECT's tunnel, split off by the relay: its calls name the CONNECT, which names the request being served", () => {
    const { events, tracer } = setup();
    const inbound = tracer.onOpen(connection(1, "inbound", 7))!;
    inbound.onData(true, bytes("GET /checkout HTTP/1.1\r\nHost: h\r\n\r\n"), 10);
    const proxy = tracer.onOpen(connection(2, "outbound", 7))!;
    proxy.onData(true, bytes("CONNECT api.pay.test:443 HTTP/1.1\r\nHost: api.pay.test:443\r\n\r\n"), 20);
    proxy.onData(false, bytes("HTTP/1.1 200 Connection established\r\n\r\n"), 30);
    const connectId = proxy.onTunnel!(31);
    expect(connectId).not.toBe("");
    const tunnel = tracer.onOpen({
      ...connection(3, "outbound", 7),
      serverAddr: "api.pay.test:443",
      tunnel: { proxyAddr: "127.0.0.1:8000", parentEventId: connectId },
    })!;
    tunnel.onData(true, bytes("POST /charge HTTP/1.1\r\nHost: api.pay.test\r\nContent-Length: 0\r\n\r\n"), 40);
    tunnel.onData(false, bytes("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"), 50);
    tunnel.onClose(60);
    proxy.onClose(70);
    inbound.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 80);
    inbound.onClose(90);
    tracer.flush();
    const byMethod = new Map(events.map((e) => [e.http_req_method + e.http_req_path, e]));
    const connect = byMethod.get("CONNECTapi.pay.test:443")!;
    const charge = byMethod.get("POST/charge")!;
    expect(connect.event_id).toBe(connectId);
    expect(connect.parent_event_id).toBe(byMethod.get("GET/checkout")!.event_id);
    expect([connect.http_duration, connect.http_server_addr]).toEqual([50, "127.0.0.1:8000"]);
    expect([charge.parent_event_id, charge.http_server_addr, charge.tags.proxy]).toEqual([connectId, "api.pay.test:443", "127.0.0.1:8000"]);
  });
});

describe("redaction in events", () => {
  const request =
    "POST /login?user=ann&access_token=SECRET1&page=2 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer SECRET2\r\nCookie: sid=SECRET3; theme=dark\r\nX-Api-Key: SECRET4\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 29\r\n\r\nuser=ann&password=SECRET5&x=1";
  const response = "HTTP/1.1 200 OK\r\nSet-Cookie: sid=SECRET6; Path=/; HttpOnly\r\nContent-Length: 0\r\n\r\n";

  function run(mode: "redact" | "hash" | "keep") {
    const { events, tracer } = setup(mode);
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    tap.onData(true, bytes(request), 1);
    tap.onData(false, bytes(response), 2);
    tap.onClose(3);
    tracer.flush();
    return events[0]!;
  }

  test("redact (default): secrets replaced, structure kept", () => {
    const e = run("redact");
    const all = JSON.stringify(e) + Buffer.from(e.http_req_body, "base64").toString();
    expect(all).not.toMatch(/SECRET/);
    expect(e.http_req_path).toBe("/login?user=ann&access_token=%5Bredacted%5D&page=2");
    expect(e.http_req_headers).toContainEqual(["Authorization", "Bearer [redacted]"]);
    expect(e.http_req_headers).toContainEqual(["Cookie", "sid=[redacted]; theme=[redacted]"]);
    expect(e.http_req_headers).toContainEqual(["X-Api-Key", "[redacted]"]);
    expect(e.http_resp_headers).toContainEqual(["Set-Cookie", "sid=[redacted]; Path=/; HttpOnly"]);
    expect(Buffer.from(e.http_req_body, "base64").toString()).toBe("user=ann&password=%5Bredacted%5D&x=1");
  });

  test("hash: equal secrets give equal short hashes, the secret itself is gone", () => {
    const a = run("hash");
    const b = run("hash");
    expect(JSON.stringify(a)).not.toMatch(/SECRET/);
    const auth = a.http_req_headers.find(([n]) => n === "Authorization")![1];
    expect(auth).toMatch(/^Bearer sha256:[0-9a-f]{16}$/);
    expect(b.http_req_headers.find(([n]) => n === "Authorization")![1]).toBe(auth);
  });

  test("JSON bodies: credential members redacted both ways, ordinary data and formatting kept", () => {
    const { events, tracer } = setup("redact");
    const tap = tracer.onOpen(connection(1, "outbound"))!;
    const reqBody = '{"username": "ann", "password": "SECRET7", "code": "NOT_FOUND", "nested": {"apiKey":"SECRET8"}}';
    tap.onData(
      true,
      bytes(
        `POST /oauth/token HTTP/1.1\r\nHost: idp\r\nContent-Type: application/json\r\nContent-Length: ${reqBody.length}\r\n\r\n${reqBody}`,
      ),
      1,
    );
    const respBody = '{"access_token":"SECRET9","token_type":"Bearer","expires_in":3600,"note":"say \\"password\\": \\"x\\""}';
    tap.onData(
      false,
      bytes(`HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${respBody.length}\r\n\r\n${respBody}`),
      2,
    );
    tap.onClose(3);
    tracer.flush();
    const e = events[0]!;
    const req = Buffer.from(e.http_req_body, "base64").toString();
    const resp = Buffer.from(e.http_resp_body, "base64").toString();
    expect(req).toBe('{"username": "ann", "password": "[redacted]", "code": "NOT_FOUND", "nested": {"apiKey":"[redacted]"}}');
    expect(resp).toBe('{"access_token":"[redacted]","token_type":"Bearer","expires_in":3600,"note":"say \\"password\\": \\"x\\""}');
    expect(JSON.parse(resp).note).toBe('say "password": "x"');
  });

  test("keep: everything as sent", () => {
    const e = run("keep");
    expect(e.http_req_path).toContain("access_token=SECRET1");
    expect(e.http_req_headers).toContainEqual(["Authorization", "Bearer SECRET2"]);
  });
});

describe("bounded: the tracer never holds up or grows without limit", () => {
  test("events beyond the queue bound are dropped and counted", () => {
    const events: TracedEvent[] = [];
    const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess, maxQueued: 10 });
    for (let i = 0; i < 25; i++) {
      const tap = tracer.onOpen(connection(i, "outbound"))!;
      tap.onData(true, new Uint8Array([1, 2, 3]), 1);
      tap.onClose(2);
    }
    tracer.flush();
    expect(events).toHaveLength(10);
    expect(tracer.stats().droppedEvents).toBe(15);
  });

  test("a huge head makes the connection passthrough, recorded with its bytes", () => {
    const { events, tracer } = setup();
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    tap.onData(true, bytes("GET / HTTP/1.1\r\n"), 1);
    const filler = bytes(`X-Fill: ${"a".repeat(1000)}\r\n`);
    for (let i = 0; i < 100; i++) tap.onData(true, filler, 2);
    tap.onClose(3);
    tracer.flush();
    expect(events.map((e) => [e.protocol, e.tags.passthrough])).toEqual([["tcp", "request: head too large"]]);
    expect(events[0]!.bytes_sent).toBe(16 + 100 * filler.length);
    expect(tracer.stats().parserGaveUp).toBe(1);
  });

  test("a large backlog is built in slices, letting other work run between them", async () => {
    const { events, tracer } = setup();
    for (let i = 0; i < 2000; i++) {
      const tap = tracer.onOpen(connection(i, "inbound"))!;
      tap.onData(true, bytes(`GET /${i} HTTP/1.1\r\nHost: h\r\n\r\n`), 1);
      tap.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 2);
    }
    await new Promise((r) => setImmediate(r));
    expect(events.length).toBeGreaterThan(0);
    expect(events.length).toBeLessThan(2000);
    for (let turn = 0; turn < 20 && events.length < 2000; turn++) await new Promise((r) => setImmediate(r));
    expect(events.map((e) => e.http_req_path)).toEqual(Array.from({ length: 2000 }, (_, i) => `/${i}`));
  });

  test("events are delivered off the data path, in order", async () => {
    const { events, tracer } = setup();
    const tap = tracer.onOpen(connection(1, "inbound"))!;
    tap.onData(true, bytes("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), 1);
    tap.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 2);
    expect(events).toHaveLength(0);
    await new Promise((r) => setImmediate(r));
    expect(events.map((e) => e.http_req_path)).toEqual(["/a"]);
  });
});

describe("bodies on the capture path", () => {
  test("stay the kept bytes (no base64 per request on the traced machine); published, they are the same base64 as before", () => {
    const captured: CapturedEvent[] = [];
    const tracer = createTracer({ onEvent: (e) => captured.push(e), host, processInfo: fakeProcess });
    const tap = tracer.onOpen(connection(1, "inbound", 7))!;
    const body = "x".repeat(3000);
    tap.onData(true, bytes(`POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello`), 10);
    tap.onData(false, bytes(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`), 20);
    tap.onClose(30);
    tracer.flush();
    const [e] = captured;
    expect(e!.http_req_body).toBeInstanceOf(Uint8Array);
    expect(e!.http_resp_body).toBeInstanceOf(Uint8Array);
    const published = toTracedEvent(e!);
    expect(published.http_req_body).toBe(Buffer.from("hello").toString("base64"));
    expect(published.http_resp_body).toBe(Buffer.from(body).toString("base64"));
  });
});

describe("requests in flight: pending notices", () => {
  test("requests waiting without a response head are told once each, bounded per connection and per run; answered ones never", async () => {
    const batches: PendingRequest[][] = [];
    const started = performance.now();
    const tracer = createTracer({ onEvent() {}, host, processInfo: fakeProcess, onPending: (r) => batches.push(r) });
    const all = () => batches.flat();
    // Pipelined requests on one connection, none answered: a connection tells at most its share.
    const pipelined = tracer.onOpen(connection(1, "inbound", 7))!;
    let many = "";
    for (let i = 0; i < 40; i++) many += `GET /piped/${i}?token=s3cret HTTP/1.1\r\nHost: h\r\n\r\n`;
    pipelined.onData(true, bytes(many), 10);
    // Answered: never pending.
    const answered = tracer.onOpen(connection(2, "inbound", 7))!;
    answered.onData(true, bytes("GET /answered HTTP/1.1\r\nHost: h\r\n\r\n"), 10);
    answered.onData(false, bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 20);
    // Started just now (its start is in the future here): not yet waited long enough.
    const fresh = tracer.onOpen(connection(3, "inbound", 7))!;
    fresh.onData(true, bytes("GET /fresh HTTP/1.1\r\nHost: h\r\n\r\n"), (Date.now() + 60_000) * 1000);
    // Hundreds of hung requests: the run tells a burst, then a few per second.
    for (let i = 0; i < 400; i++)
      tracer.onOpen(connection(10 + i, "inbound", 7))!.onData(true, bytes(`GET /hung/${i} HTTP/1.1\r\nHost: h\r\n\r\n`), 10);

    const deadline = Date.now() + 10_000;
    while (all().length < pendingLimits.burst && Date.now() < deadline) await Bun.sleep(50);
    await Bun.sleep(600);
    const elapsed = (performance.now() - started) / 1000;
    const told = all();
    expect(told.length).toBeGreaterThanOrEqual(pendingLimits.burst);
    expect(told.length).toBeLessThanOrEqual(pendingLimits.burst + Math.ceil(pendingLimits.perSecond * elapsed) + 1);
    for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(pendingLimits.maxPerMessage);
    expect(new Set(told.map((r) => r.event_id)).size).toBe(told.length);
    const piped = told.filter((r) => r.http_req_path.startsWith("/piped/"));
    expect(piped.length).toBe(pendingLimits.perConnection);
    expect(piped[0]).toMatchObject({
      http_req_method: "GET",
      http_req_path: "/piped/0?token=%5Bredacted%5D",
      http_req_host: "h",
      time: 10,
    });
    expect(told.some((r) => r.http_req_path === "/answered" || r.http_req_path === "/fresh")).toBe(false);
  });
});
