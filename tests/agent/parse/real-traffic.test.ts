import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import type { TCPSocketListener } from "bun";
import type { ConnectionTap } from "~/agent/relay/observer.ts";
import { nowMicros } from "~/agent/relay/observer.ts";
import { createTracer } from "~/agent/tracer.ts";
import { type TracedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { body, fakeProcess, host } from "./helpers.ts";

/**
 * Real clients and a real server with a minimal TCP relay between them that forwards bytes first and
 * hands the tracer a copy, like the supervisor's relay: the parser meets real-world framing.
 */
let upstream: Server;
type Leg = { tap: ConnectionTap | null; peer: Awaited<ReturnType<typeof Bun.connect>> | null; pending: Uint8Array[] };
let relay: TCPSocketListener<Leg>;
const events: TracedEvent[] = [];
const tracer = createTracer({ onEvent: (e) => events.push(toTracedEvent(e)), host, processInfo: fakeProcess, redact: "redact" });

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      const got = Buffer.concat(chunks);
      if (req.url === "/chunked") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("part one, ");
        setTimeout(() => res.end("part two"), 5);
      } else if (req.url === "/gzip") {
        const packed = gzipSync(JSON.stringify({ hello: "world" }));
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": packed.length });
        res.end(packed);
      } else if (req.url === "/big") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(Buffer.alloc(3 * 1024 * 1024, 120));
      } else {
        res.writeHead(201, { "content-type": "text/plain", "set-cookie": "sid=secret-session; Path=/" });
        res.end(`echo ${got.length}`);
      }
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  let nextId = 1;

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
          id: nextId++,
          direction: "inbound",
          clientAddr: `127.0.0.1:${client.remotePort}`,
          serverAddr: `127.0.0.1:${upstreamPort}`,
          pid: 42,
          startedAt,
          connectedAt: nowMicros(),
        });
        for (const c of leg.pending) {
          leg.peer.write(c);
          leg.tap?.onData(true, c, nowMicros());
        }
        leg.pending = [];
      },
      data(client, chunk) {
        const leg = client.data;
        if (!leg.peer) {
          leg.pending.push(new Uint8Array(chunk));
          return;
        }
        leg.peer.write(chunk);
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

/** Clients run as child processes without blocking the relay's event loop. */
async function run(cmd: string[]): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return out;
}

async function settle(count: number): Promise<TracedEvent[]> {
  const deadline = Date.now() + 5000;
  while (events.length < count && Date.now() < deadline) await Bun.sleep(10);
  return events.splice(0);
}

describe("real traffic through a relay", () => {
  test("fetch: keep-alive GETs and a POST, chunked and gzip responses, timings measured", async () => {
    const base = `http://127.0.0.1:${relay.port}`;
    expect(await (await fetch(`${base}/chunked`)).text()).toBe("part one, part two");
    expect(await (await fetch(`${base}/gzip`)).json()).toEqual({ hello: "world" });
    const posted = await fetch(`${base}/post?api_key=k123&x=1`, {
      method: "POST",
      body: "x".repeat(1000),
      headers: { authorization: "Bearer tok" },
    });
    expect(await posted.text()).toBe("echo 1000");
    const got = await settle(3);
    const byPath = new Map(got.map((e) => [e.http_req_path.split("?")[0], e]));
    const chunked = byPath.get("/chunked")!;
    expect([chunked.http_resp_status_code, chunked.http_resp_transfer_encoding, body(chunked, "resp")]).toEqual([
      200,
      "chunked",
      "part one, part two",
    ]);
    // The server sends the last part 5 ms after the first: processing plus sending covers it.
    expect(chunked.timing_wait + chunked.timing_receive).toBeGreaterThanOrEqual(4000);
    expect(chunked.http_duration).toBeGreaterThanOrEqual(chunked.timing_send + chunked.timing_wait + chunked.timing_receive - 2);
    const gz = byPath.get("/gzip")!;
    expect(body(gz, "resp")).toBe(JSON.stringify({ hello: "world" }));
    const post = byPath.get("/post")!;
    expect(post.http_req_method).toBe("POST");
    expect(post.http_req_path).toBe("/post?api_key=%5Bredacted%5D&x=1");
    expect(post.http_req_body_size_bytes_wire).toBe(1000);
    expect(post.http_req_headers.find(([n]) => n.toLowerCase() === "authorization")![1]).toBe("Bearer [redacted]");
    expect(post.http_resp_headers.find(([n]) => n.toLowerCase() === "set-cookie")![1]).toBe("sid=[redacted]; Path=/");
    for (const e of got) {
      expect(e.http_duration).toBeGreaterThan(0);
      expect(e.timing_wait).toBeGreaterThanOrEqual(0);
    }
  });

  test("curl: a 3 MiB response is counted exactly and sampled to the limit", async () => {
    expect(await run(["curl", "-s", "-o", "/dev/null", "-w", "%{size_download}", `http://127.0.0.1:${relay.port}/big`])).toBe(
      String(3 * 1024 * 1024),
    );
    const [e] = await settle(1);
    expect(e!.http_resp_body_size_bytes_wire).toBe(3 * 1024 * 1024);
    expect(e!.http_resp_body_truncated).toBe(true);
    expect(Buffer.from(e!.http_resp_body, "base64").length).toBe(64 * 1024);
    expect(e!.http_req_headers.some(([n, v]) => n === "User-Agent" && v.startsWith("curl/"))).toBe(true);
  });

  test("python http.client: pipelined-style reuse of one connection", async () => {
    const script = `
import http.client
c = http.client.HTTPConnection("127.0.0.1", ${relay.port})
for path in ["/a", "/b", "/c"]:
    c.request("PUT", path, body=b"hello")
    r = c.getresponse()
    r.read()
print("ok")
`;
    expect((await run(["python3", "-c", script])).trim()).toBe("ok");
    const got = await settle(3);
    expect(got.map((e) => [e.http_req_method, e.http_req_path, e.http_resp_status_code, body(e, "resp")])).toEqual([
      ["PUT", "/a", 201, "echo 5"],
      ["PUT", "/b", 201, "echo 5"],
      ["PUT", "/c", 201, "echo 5"],
    ]);
    expect(tracer.stats().tapErrors).toBe(0);
    expect(tracer.stats().parserGaveUp).toBe(0);
  });
});
