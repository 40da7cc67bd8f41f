import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSession, type Session } from "~/agent/session.ts";
import type { HostEnvironment } from "~/lib/server/env.ts";
import { startServer, type TestServer } from "../support/publish-server.ts";

/**
 * `tapscope run`'s session on one relay thread, publishing: the tracer's events reach the server whole, whether the
 * server reads binary publish frames (encoded as the events are built) or JSON only (an older server).
 */
const host: HostEnvironment = {
  isKubernetes: false,
  kubernetesNamespace: "",
  gcpProject: "",
  gkeClusterName: "",
  gkeClusterLocation: "",
  gkeNodeName: "",
};
const enc = new TextEncoder();

function newSession(endpoint: string, token: string | undefined): Session {
  return createSession({
    agent: { token, endpoint, service: undefined, linkId: undefined, isColorRefused: true },
    host,
    service: "session-test",
    redact: "redact",
    payloadLimit: 64 * 1024,
    log: false,
    publish: true,
    relayThreads: 1,
  });
}

/** `count` keep-alive exchanges on one connection, as the relay hands them to the tracer. */
function exchanges(session: Session, count: number): void {
  const tap = session.tracer.onOpen({
    id: 1,
    direction: "inbound",
    clientAddr: "127.0.0.1:40000",
    serverAddr: "127.0.0.1:8080",
    pid: process.pid,
    startedAt: 1,
    connectedAt: 1,
  })!;
  let at = 10;
  for (let i = 0; i < count; i++) {
    tap.onData(true, enc.encode(`GET /items/${i}?token=s3cret HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer abc\r\n\r\n`), at++);
    tap.onData(false, enc.encode(`HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok`), at++);
  }
  tap.onClose(at);
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await Bun.sleep(10);
}

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

describe("a publishing session on one relay thread", () => {
  test("every event reaches a server that reads binary frames, in order, redacted, bodies intact", async () => {
    const { namespaceId, token } = await server.namespaceWithToken();
    const session = newSession(server.endpoint, token);
    await session.joined(5000);
    // More than one frame's worth (500 events), and a rest sent at the end.
    exchanges(session, 1203);
    await session.finish();
    await until(() => server.events().filter((e) => e.service === "session-test").length >= 1203);
    const events = server.received.filter((r) => r.target.namespaceId === namespaceId).flatMap((r) => r.events);
    expect(events.map((e) => e.http_req_path)).toEqual(Array.from({ length: 1203 }, (_, i) => `/items/${i}?token=%5Bredacted%5D`));
    expect(events[0]).toMatchObject({
      http_req_method: "GET",
      http_resp_status_code: 200,
      http_resp_body: Buffer.from("ok").toString("base64"),
      http_req_headers: [
        ["Host", "api"],
        ["Authorization", "Bearer [redacted]"],
      ],
    });
  });

  test("a server that reads JSON only gets every event too", async () => {
    const paths: string[] = [];
    const older = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req, srv) {
        if (new URL(req.url).pathname === "/api/JoinPublisher") return Response.json({ websocketUrl: `ws://127.0.0.1:${srv.port}/socket` });
        return srv.upgrade(req) ? undefined : new Response("no", { status: 400 });
      },
      websocket: {
        open(ws) {
          ws.send(JSON.stringify({ type: "ready", namespaceId: null, linkId: null, maxMessageBytes: 4 << 20, maxEventsPerMessage: 1000 }));
        },
        message(ws, data) {
          const message = JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data)) as {
            seq: number;
            events: Array<{ http_req_path: string }>;
          };
          paths.push(...message.events.map((e) => e.http_req_path));
          ws.send(
            JSON.stringify({ type: "ack", seq: message.seq, accepted: message.events.length, refused: 0, rateLimited: 0, truncated: 0 }),
          );
        },
      },
    });
    const session = newSession(`http://127.0.0.1:${older.port}`, undefined);
    await session.joined(5000);
    exchanges(session, 700);
    await session.finish();
    expect(paths).toEqual(Array.from({ length: 700 }, (_, i) => `/items/${i}?token=%5Bredacted%5D`));
    older.stop(true);
  });
});
