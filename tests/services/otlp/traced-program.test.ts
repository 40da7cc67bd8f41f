import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { BUN, MAIN, type Running, start } from "../../agent/harness.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { startTunnelServer, type TunnelServer } from "../../support/tunnel-server.ts";

/**
 * From a real program to a collector: `tapscope run` traces a program whose inbound request makes an outbound call; the
 * server it publishes to exports both to a local OTLP receiver, as two spans of one trace, under the caller's trace
 * when the caller sent `traceparent`.
 */
let server: TunnelServer;
let receiver: OtlpReceiver;
let program: Running;
let upstream: ReturnType<typeof Bun.serve>;
let port: number;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  upstream = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({ id: "ch_123" }) });
  server = await startTunnelServer({ withStore: false, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base } });
  const owner = await server.onboardedUser();
  const token = await server.namespaceToken(owner);
  // Traced and publishing, as a user runs it (the harness's own tracing does not publish).
  program = start([BUN, MAIN, "run", "--", BUN, join(import.meta.dir, "fixtures/checkout-server.ts")], {
    traced: false,
    env: {
      TAPSCOPE_TOKEN: token,
      TAPSCOPE_ENDPOINT: server.base,
      TAPSCOPE_SERVICE: "checkout",
      UPSTREAM_URL: `http://127.0.0.1:${upstream.port}`,
    },
  });
  const out = await program.waitForOutput(/listening \d+/, 30_000);
  port = Number(/listening (\d+)/.exec(out)?.[1]);
}, 60_000);

afterAll(async () => {
  await program?.stop();
  await server?.close();
  upstream?.stop(true);
  receiver?.stop();
});

describe("a traced program's requests as OpenTelemetry spans", () => {
  test("the inbound request and its outbound call arrive as two spans of the caller's trace", async () => {
    const callerTrace = "0af7651916cd43dd8448eb211c80319c";
    const callerSpan = "b7ad6b7169203331";
    const res = await fetch(`http://127.0.0.1:${port}/checkout?cart=7`, {
      method: "POST",
      headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    expect(res.status).toBe(201);
    const spans = await receiver.waitForSpans(2, 30_000, (s) => s.traceId === callerTrace);
    const inbound = spans.find((s) => s.kind === 2)!;
    const outbound = spans.find((s) => s.kind === 3)!;
    expect(inbound.parentSpanId).toBe(callerSpan);
    expect(outbound.parentSpanId).toBe(inbound.spanId);
    expect(inbound.attributes).toMatchObject({
      "http.request.method": "POST",
      "url.path": "/checkout",
      "url.query": "cart=7",
      "http.response.status_code": 201,
      "network.protocol.version": "1.1",
      "server.address": "127.0.0.1",
      "server.port": port,
    });
    expect(outbound.attributes).toMatchObject({
      "http.request.method": "POST",
      "url.full": `http://127.0.0.1:${upstream.port}/v1/charges?amount=42`,
      "server.address": "127.0.0.1",
      "server.port": upstream.port,
      "http.response.status_code": 200,
    });
    expect(inbound.resource["service.name"]).toBe("checkout");
    expect(inbound.resource["process.pid"]).toBeGreaterThan(0);
    expect(String(inbound.resource["process.command_line"])).toContain("checkout-server.ts");
    expect(String(inbound.attributes["tapscope.url"])).toStartWith(`${server.base}/dashboard/`);
  }, 60_000);

  test("without traceparent the request starts a trace; a 500 is an error span", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/boom`);
    expect(res.status).toBe(500);
    const [span] = await receiver.waitForSpans(1, 30_000, (s) => s.attributes["url.path"] === "/boom");
    expect(span!.parentSpanId).toBe("");
    expect(span!.traceId).toBe(String(span!.attributes["tapscope.event_id"]).replaceAll("-", ""));
    expect(span!.status.code).toBe(2);
    expect(span!.attributes["error.type"]).toBe("500");
  }, 60_000);
});
