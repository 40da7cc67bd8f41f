/**
 * A small real HTTP program for the live-view browser tests, normally run under `tapscope run`, which
 * captures its traffic. With LIVE_PROGRAM_SELF_PUBLISH=1 (for machines where the capture engine cannot
 * run) it publishes a TracedEvent for each exchange itself through the real publisher (src/agent/publish.ts)
 * and prints the link like `tapscope run` does. It prints "listening <port>" once it serves.
 * Env: TAPSCOPE_ENDPOINT (server), TAPSCOPE_TOKEN (optional namespace token).
 */
import { randomUUID } from "node:crypto";
import { gzipSync } from "node:zlib";
import { createPublisher } from "~/agent/publish.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent } from "../support/event-factory.ts";

const isSelfPublishing = process.env.LIVE_PROGRAM_SELF_PUBLISH === "1";
const endpoint = process.env.TAPSCOPE_ENDPOINT ?? "";
const realPublisher = isSelfPublishing
  ? createPublisher({ endpoint, token: process.env.TAPSCOPE_TOKEN || undefined, batchIntervalMs: 20 })
  : null;
const publisher = { send: (event: TracedEvent) => realPublisher?.send(event) };
if (realPublisher) {
  const join = await realPublisher.join();
  if (join.linkUrl) console.log(`tapscope: watch live at ${join.linkUrl}`);
}

const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

// The "third-party API" the program calls while serving /checkout: UPSTREAM_URL (a server outside the traced
// process, so only the program's own call shows up), else one in this process.
const upstreamUrl =
  process.env.UPSTREAM_URL ||
  `http://127.0.0.1:${
    Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async () => {
        await Bun.sleep(30);
        return Response.json({ charged: true, id: "ch_123" });
      },
    }).port
  }`;
const upstreamHost = new URL(upstreamUrl).host;

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");

/** This program's events: the shared test literal with this process's facts; each exchange sets the rest. */
function baseEvent(parts: Partial<TracedEvent>): TracedEvent {
  return tracedEvent({
    service: "live-program",
    hostname: "e2e",
    process_id: process.pid,
    process_executable_name: "bun",
    process_executable_size: 0,
    process_command_line: "bun live-program.ts",
    process_user: "root",
    http_client_addr: "127.0.0.1:40000",
    http_server_addr: "127.0.0.1:0",
    http_duration: 0,
    http_req_path: "/",
    http_req_host: "",
    http_req_headers: [],
    http_resp_body_size_bytes_wire: 0,
    http_resp_content_type: "",
    http_resp_content_length: -1,
    http_resp_headers: [],
    http_resp_body: "",
    timing_send: 0,
    timing_wait: 0,
    timing_receive: 0,
    bytes_sent: 0,
    bytes_received: 0,
    ...parts,
  });
}

async function handle(req: Request, eventId: string): Promise<Response> {
  const url = new URL(req.url);
  if (url.pathname === "/hello") return Response.json({ hello: "world", q: url.searchParams.get("q") });
  if (url.pathname === "/echo")
    return new Response(await req.text(), { headers: { "content-type": req.headers.get("content-type") ?? "text/plain", "x-echo": "1" } });
  if (url.pathname === "/pixel.png") return new Response(png, { headers: { "content-type": "image/png" } });
  if (url.pathname === "/html")
    return new Response('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">', {
      headers: { "content-type": "text/html" },
    });
  if (url.pathname === "/fail") return Response.json({ error: "boom" }, { status: 500 });
  if (url.pathname === "/gzip")
    return new Response(gzipSync(JSON.stringify({ error: { code: "E1042", message: "quota exceeded" } })), {
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
  if (url.pathname === "/checkout") {
    const started = performance.now();
    const startedAt = Date.now() * 1000;
    const body = JSON.stringify({ amount: 42 });
    const res = await fetch(`${upstreamUrl}/v1/charges`, { method: "POST", body, headers: { "content-type": "application/json" } });
    const text = await res.text();
    const took = Math.round((performance.now() - started) * 1000);
    publisher.send(
      baseEvent({
        time: startedAt,
        parent_event_id: eventId,
        http_is_outgoing: true,
        http_req_method: "POST",
        http_req_path: "/v1/charges",
        http_req_host: upstreamHost,
        http_server_addr: upstreamHost,
        http_req_headers: [["Content-Type", "application/json"]],
        http_req_content_type: "application/json",
        http_req_body: b64(body),
        http_req_body_size_bytes_wire: body.length,
        http_resp_status_code: res.status,
        http_resp_content_type: "application/json",
        http_resp_headers: [["Content-Type", "application/json"]],
        http_resp_body: b64(text),
        http_resp_body_size_bytes_wire: text.length,
        http_duration: took,
        timing_connect: Math.round(took * 0.1),
        timing_tls: -1,
        timing_send: Math.round(took * 0.05),
        timing_wait: Math.round(took * 0.8),
        timing_receive: Math.round(took * 0.05),
      }),
    );
    return Response.json({ ok: true, charge: JSON.parse(text) });
  }
  return new Response("not found", { status: 404 });
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: "127.0.0.1",
  async fetch(req) {
    const started = performance.now();
    const time = Date.now() * 1000;
    const eventId = randomUUID();
    const reqBody = new Uint8Array(await req.clone().arrayBuffer());
    const res = await handle(req, eventId);
    const respBody = new Uint8Array(await res.clone().arrayBuffer());
    const took = Math.max(1, Math.round((performance.now() - started) * 1000));
    const url = new URL(req.url);
    publisher.send(
      baseEvent({
        time,
        event_id: eventId,
        http_req_method: req.method,
        http_req_path: url.pathname + url.search,
        http_req_host: req.headers.get("host") ?? "",
        http_server_addr: `127.0.0.1:${server.port}`,
        http_req_headers: [...req.headers.entries()].map(([k, v]) => [k, v] as [string, string]),
        http_req_content_type: req.headers.get("content-type") ?? "",
        http_req_body: b64(reqBody),
        http_req_body_size_bytes_wire: reqBody.length,
        http_resp_status_code: res.status,
        http_resp_content_type: res.headers.get("content-type") ?? "",
        http_resp_content_encoding: res.headers.get("content-encoding") ?? "",
        http_resp_headers: [...res.headers.entries()].map(([k, v]) => [k, v] as [string, string]),
        http_resp_body: b64(respBody),
        http_resp_body_size_bytes_wire: respBody.length,
        http_duration: took,
        timing_send: Math.round(took * 0.1),
        timing_wait: Math.round(took * 0.8),
        timing_receive: Math.round(took * 0.1),
      }),
    );
    return res;
  },
});
console.log(`listening ${server.port}`);
