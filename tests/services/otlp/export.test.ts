import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { startTestApp, type TestApp } from "../../support/app.ts";
import { tracedEvent } from "../../support/event-factory.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";

/**
 * Events accepted by ingest reach an OTLP/HTTP receiver as spans (decoded there with the official protobuf
 * definitions): the mapping, the trace a request joins, where each namespace's spans go, retries and refusals.
 */
let t: TestApp;
let server: OtlpReceiver;

beforeAll(async () => {
  server = await startOtlpReceiver();
  t = await startTestApp({
    backend: "pglite",
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: server.base, OTEL_EXPORTER_OTLP_HEADERS: "x-server-key=s%20e" },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  server?.stop();
});

function publish(namespaceId: string, events: TracedEvent[]) {
  const reply = t.runtime.ingest.handle({ namespaceId, linkId: null }, { type: "events", seq: 1, events });
  expect(reply.type).toBe("ack");
}

const spansOf = (ids: string[]) => server.spans().filter((s) => ids.includes(String(s.attributes["tapscope.event_id"])));

describe("OTLP trace export", () => {
  test("an inbound request and its outbound call: SERVER and CLIENT spans of one trace, with the conventions' attributes", async () => {
    const u = await t.onboardedUser();
    const inbound = tracedEvent({
      service: "checkout",
      hostname: "web-1",
      process_id: 4321,
      process_command_line: "node server.js --password=[redacted]",
      kubernetes_namespace: "shop",
      http_req_method: "POST",
      http_req_path: "/orders?page=2",
      http_req_host: "shop.example:8080",
      http_resp_status_code: 502,
      http_req_headers: [
        ["Host", "shop.example:8080"],
        ["User-Agent", "curl/8"],
      ],
      http_duration: 250_000,
    });
    const outbound = tracedEvent({
      service: "checkout",
      hostname: "web-1",
      process_id: 4321,
      http_is_outgoing: true,
      parent_event_id: inbound.event_id,
      http_req_method: "GET",
      http_req_path: "/v1/charges/ch_1",
      http_req_host: "api.stripe.test",
      http_server_addr: "10.0.0.7:443",
      http_version: "2",
      tls_server_name: "api.stripe.test",
      tags: { tls: "decrypted" },
      http_resp_status_code: 404,
      time: inbound.time + 1000,
      http_duration: 40_000,
    });
    // The call ends before the request it was made for: it arrives first.
    publish(u.namespaceId, [outbound]);
    await Bun.sleep(50);
    publish(u.namespaceId, [inbound]);
    await t.runtime.otlp.flush();
    const spans = await server.waitForSpans(2, 20_000, (s) =>
      [inbound.event_id, outbound.event_id].includes(String(s.attributes["tapscope.event_id"])),
    );
    const server_ = spans.find((s) => s.attributes["tapscope.event_id"] === inbound.event_id)!;
    const client = spans.find((s) => s.attributes["tapscope.event_id"] === outbound.event_id)!;

    expect(server_.kind).toBe(2);
    expect(client.kind).toBe(3);
    expect(client.traceId).toBe(server_.traceId);
    expect(server_.traceId).toBe(inbound.event_id.replaceAll("-", ""));
    expect(server_.parentSpanId).toBe("");
    expect(client.parentSpanId).toBe(server_.spanId);
    expect(server_.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(server_.name).toBe("POST");
    expect(server_.startTimeUnixNano).toBe(String(BigInt(inbound.time) * 1000n));
    expect(BigInt(server_.endTimeUnixNano) - BigInt(server_.startTimeUnixNano)).toBe(250_000_000n);
    expect(server_.attributes).toMatchObject({
      "http.request.method": "POST",
      "url.path": "/orders",
      "url.query": "page=2",
      "url.scheme": "http",
      "server.address": "shop.example",
      "server.port": 8080,
      "http.response.status_code": 502,
      "network.protocol.version": "1.1",
      "user_agent.original": "curl/8",
      "error.type": "502",
    });
    expect(server_.status.code).toBe(2);
    expect(server_.resource).toMatchObject({
      "service.name": "checkout",
      "host.name": "web-1",
      "process.pid": 4321,
      "process.command_line": "node server.js --password=[redacted]",
      "k8s.namespace.name": "shop",
    });
    expect(client.attributes).toMatchObject({
      "http.request.method": "GET",
      "url.full": "https://api.stripe.test/v1/charges/ch_1",
      "server.address": "api.stripe.test",
      "network.protocol.version": "2",
      "network.peer.address": "10.0.0.7",
      "http.response.status_code": 404,
    });
    // A client span fails on a 4xx too.
    expect(client.status.code).toBe(2);
    // The way back to the request in Tapscope (bodies stay there), on the namespace's explorer narrowed to the event.
    const link = new URL(String(server_.attributes["tapscope.url"]));
    expect(link.pathname).toMatch(/^\/dashboard\/ns-[\w-]+\/requests$/);
    const state = JSON.parse(Buffer.from(link.searchParams.get("filter")!, "base64").toString());
    expect(state.text).toEqual([`id == "${inbound.event_id}"`]);
    // No body, no header values travel.
    expect(JSON.stringify(spans)).not.toContain("e30=");
    // The server-wide headers, percent-decoded.
    expect(server.requests.at(-1)!.headers.get("x-server-key")).toBe("s e");
    expect(server.requests.at(-1)!.contentType).toBe("application/x-protobuf");
  }, 30_000);

  test("a request that carried a W3C traceparent joins the caller's trace, and its outbound call follows", async () => {
    const u = await t.onboardedUser();
    const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const inbound = tracedEvent({
      http_req_headers: [
        ["traceparent", `00-${callerTrace}-${callerSpan}-01`],
        ["tracestate", "vendor=1"],
      ],
    });
    const outbound = tracedEvent({ http_is_outgoing: true, parent_event_id: inbound.event_id, time: inbound.time + 10 });
    publish(u.namespaceId, [outbound]);
    publish(u.namespaceId, [inbound]);
    await t.runtime.otlp.flush();
    await server.waitForSpans(2, 20_000, (s) => [inbound.event_id, outbound.event_id].includes(String(s.attributes["tapscope.event_id"])));
    const [srv, cli] = [spansOf([inbound.event_id])[0]!, spansOf([outbound.event_id])[0]!];
    expect(srv.traceId).toBe(callerTrace);
    expect(srv.parentSpanId).toBe(callerSpan);
    expect(srv.traceState).toBe("vendor=1");
    expect(cli.traceId).toBe(callerTrace);
    expect(cli.parentSpanId).toBe(srv.spanId);
  }, 30_000);

  test("an invalid traceparent starts a trace of its own", async () => {
    const u = await t.onboardedUser();
    const inbound = tracedEvent({ http_req_headers: [["traceparent", `00-${"0".repeat(32)}-00f067aa0ba902b7-01`]] });
    publish(u.namespaceId, [inbound]);
    await t.runtime.otlp.flush();
    const [span] = await server.waitForSpans(1, 20_000, (s) => s.attributes["tapscope.event_id"] === inbound.event_id);
    expect(span!.traceId).toBe(inbound.event_id.replaceAll("-", ""));
    expect(span!.parentSpanId).toBe("");
  }, 30_000);

  test("a namespace's own collector (with its headers, as JSON) replaces the server's; turned off, nothing is sent", async () => {
    const own = await startOtlpReceiver();
    try {
      const u = await t.onboardedUser();
      const other = await t.onboardedUser();
      const saved = await t.call(
        "/api/SaveOtlpExport",
        {
          namespaceId: u.namespaceId,
          endpoint: own.base,
          protocol: "http/json",
          isEnabled: true,
          headers: [{ name: "x-honeycomb-team", value: "secret-key-123" }],
        },
        { cookie: u.cookie },
      );
      expect(saved.status).toBe(200);
      expect(saved.body.destination).toBe("namespace");
      const mine = tracedEvent({ http_req_path: "/mine" });
      const theirs = tracedEvent({ http_req_path: "/theirs" });
      publish(u.namespaceId, [mine]);
      publish(other.namespaceId, [theirs]);
      await t.runtime.otlp.flush();
      const [got] = await own.waitForSpans(1);
      expect(got!.attributes["tapscope.event_id"]).toBe(mine.event_id);
      expect(got!.traceId).toBe(mine.event_id.replaceAll("-", ""));
      expect(own.requests[0]!.path).toBe("/v1/traces");
      expect(own.requests[0]!.contentType).toBe("application/json");
      expect(own.requests[0]!.headers.get("x-honeycomb-team")).toBe("secret-key-123");
      await server.waitForSpans(1, 20_000, (s) => s.attributes["tapscope.event_id"] === theirs.event_id);
      expect(spansOf([mine.event_id])).toEqual([]);
      expect(own.spans().map((s) => s.attributes["tapscope.event_id"])).not.toContain(theirs.event_id);

      const off = await t.call(
        "/api/SaveOtlpExport",
        { namespaceId: u.namespaceId, endpoint: own.base, protocol: "http/json", isEnabled: false },
        { cookie: u.cookie },
      );
      expect(off.body.destination).toBe("none");
      const quiet = tracedEvent();
      publish(u.namespaceId, [quiet]);
      await t.runtime.otlp.flush();
      await Bun.sleep(300);
      expect([...own.spans(), ...server.spans()].map((s) => s.attributes["tapscope.event_id"])).not.toContain(quiet.event_id);
    } finally {
      own.stop();
    }
  }, 30_000);

  test("a collector briefly away (503) gets the batch again; one that refuses (400) is counted and its words kept", async () => {
    const flaky = await startOtlpReceiver();
    try {
      const u = await t.onboardedUser();
      await t.call(
        "/api/SaveOtlpExport",
        { namespaceId: u.namespaceId, endpoint: flaky.base, protocol: "http/protobuf", isEnabled: true },
        { cookie: u.cookie },
      );
      flaky.answerNext({ status: 503, body: "overloaded" }, { status: 503, body: "overloaded" });
      const events = [tracedEvent(), tracedEvent()];
      publish(u.namespaceId, events);
      await t.runtime.otlp.flush();
      const got = await flaky.waitForSpans(2);
      expect(got.map((s) => s.attributes["tapscope.event_id"]).sort()).toEqual(events.map((e) => e.event_id).sort());
      expect(flaky.attempts()).toBe(3);
      let answer = await t.call("/api/GetOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie });
      expect(answer.body.stats).toMatchObject({ exported: 2, failed: 0, dropped: 0, queued: 0 });

      flaky.answerNext({ status: 400, body: JSON.stringify({ code: 3, message: "invalid span kind" }), contentType: "application/json" });
      publish(u.namespaceId, [tracedEvent()]);
      await t.runtime.otlp.flush();
      answer = await t.call("/api/GetOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie });
      expect(answer.body.stats).toMatchObject({ exported: 2, failed: 1, queued: 0 });
      expect(answer.body.stats.lastError.message).toBe("HTTP 400: invalid span kind");
      expect(flaky.spans()).toHaveLength(2);
      const health = await t.request("/api/health");
      expect(health.body.otlp.failed).toBeGreaterThanOrEqual(1);
      expect(health.body.otlp.exported).toBeGreaterThanOrEqual(2);
    } finally {
      flaky.stop();
    }
  }, 30_000);

  test("shared links' events are not exported (they belong to no namespace)", async () => {
    const before = server.attempts();
    const e = tracedEvent({ event_id: randomUUID() });
    t.runtime.ingest.handle({ namespaceId: null, linkId: "abcdefghijklmnopqrstuv" }, { type: "events", seq: 1, events: [e] });
    await t.runtime.otlp.flush();
    expect(server.attempts()).toBe(before);
  }, 30_000);
});
