import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JSON_BODY_LIMIT, SERVER_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import { publishLimits } from "~/lib/protocol/publish.ts";
import { pollHealth, type ServerProcess, seedNamespaceToken, spawnServer } from "../../support/server-process.ts";

const CHUNK = 64 * 1024;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.POSITIVE_INFINITY;
}
/** What a streaming client may have pushed into loopback socket buffers by the time the refusal reaches it. */
const BUFFERED = 16 * 1024 * 1024;

/**
 * Issue 14 item 6: large bodies and frames from clients that need no account once held the server (eight 100 MB
 * EmailLogin bodies: 1 GB RSS). The real server runs as its own process while these are sent back to back, and
 * /api/health must keep answering about as fast as it did before, measured in the same test.
 */
describe("oversized bodies and frames are refused early, and the server keeps answering", () => {
  let server: ServerProcess;
  let token = "";

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tapscope-unbounded-"));
    token = (await seedNamespaceToken(dataDir)).token;
    server = await spawnServer({ dataDir });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
  });

  /** A JSON body that never ends by itself (it would be 64 MB), counting what the server pulled of it. */
  function endlessJson() {
    const counter = { pulled: 0 };
    const head = new TextEncoder().encode('{"email":"');
    const chunk = new Uint8Array(CHUNK).fill(0x61);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        const next = sent === 0 ? head : sent > 64 * 1024 * 1024 ? null : chunk;
        if (!next) {
          c.enqueue(new TextEncoder().encode('@example.com"}'));
          c.close();
          return;
        }
        sent += next.byteLength;
        counter.pulled = sent;
        c.enqueue(next);
      },
    });
    return { body, counter };
  }

  /** POSTs an endless JSON body, streamed (no Content-Length) or declared, and answers status and what was pulled. */
  async function oversizedPost(path: string, declared: boolean, headers: Record<string, string> = {}) {
    const { body, counter } = endlessJson();
    const init: RequestInit & { duplex: "half" } = {
      method: "POST",
      headers: { "content-type": "application/json", ...headers, ...(declared ? { "content-length": String(64 * 1024 * 1024 + 24) } : {}) },
      body,
      duplex: "half",
      signal: AbortSignal.timeout(10_000),
    };
    try {
      const res = await fetch(`${server.endpoint}${path}`, init);
      const text = await res.text();
      return { status: res.status, text, pulled: counter.pulled };
    } catch (err) {
      // The server may close the connection once it has answered; what it answered is what matters.
      return { status: 0, text: String(err), pulled: counter.pulled };
    }
  }

  /** Publish sockets that send JSON text frames over the message limit, one after each reply. */
  async function oversizedTextFrames(sockets: number, untilMs: number) {
    const replies: string[] = [];
    const frame = JSON.stringify({ type: "events", seq: 1, events: [{ http_req_path: `/${"x".repeat(publishLimits.maxMessageBytes)}` }] });
    await Promise.all(
      Array.from({ length: sockets }, async () => {
        const joined = await fetch(`${server.endpoint}/api/JoinPublisher`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: "{}",
        });
        const { websocketUrl } = (await joined.json()) as { websocketUrl: string };
        const ws = new WebSocket(websocketUrl);
        await new Promise<void>((resolve, reject) => {
          ws.onclose = () => resolve();
          ws.onerror = () => reject(new Error("publish socket failed"));
          ws.onmessage = (ev) => {
            const reply = JSON.parse(String(ev.data)) as { type: string; code?: string };
            if (reply.type !== "ready") replies.push(reply.code ?? reply.type);
            if (performance.now() < untilMs) ws.send(frame);
            else ws.close();
          };
        });
      }),
    );
    return replies;
  }

  /** Runs the attacks for about durationMs while polling health every 10 ms; answers the latencies and results. */
  async function measure(durationMs: number) {
    const health = pollHealth(server.endpoint, 10);
    const untilMs = performance.now() + durationMs;
    const posts: Array<{ path: string; status: number; pulled: number }> = [];
    const paths = ["/api/EmailLogin", "/api/GenerateNamespaceToken", "/api/JoinPublisher", "/api/LogEvent"];
    const bodies = Promise.all(
      paths.map(async (path, i) => {
        for (let n = 0; performance.now() < untilMs; n++) {
          const r = await oversizedPost(path, (n + i) % 2 === 0);
          posts.push({ path, status: r.status, pulled: r.pulled });
        }
      }),
    );
    const frames = oversizedTextFrames(2, untilMs);
    await bodies;
    const replies = await frames;
    return { latencies: await health.stop(), posts, replies };
  }

  test("streams of oversized JSON bodies and text frames: all refused, health answering about as fast as before", async () => {
    const idle = pollHealth(server.endpoint, 10);
    await Bun.sleep(1000);
    const baseline = await idle.stop();
    const run = await measure(3000);
    // A server reading the bodies whole spends seconds in them and in collecting them: health answers slower by far
    // more than ten times, or not at all.
    expect(run.latencies.length).toBeGreaterThan(50);
    expect(run.latencies.filter((ms) => !Number.isFinite(ms))).toEqual([]);
    expect(quantile(run.latencies, 0.5)).toBeLessThan(quantile(baseline, 0.5) * 10 + 50);
    expect(quantile(run.latencies, 0.95)).toBeLessThan(quantile(baseline, 0.95) * 10 + 250);

    expect(run.posts.length).toBeGreaterThan(8);
    for (const post of run.posts) {
      // Refused for size, or for rate before the body was read (sign-in has its own budget per client).
      expect([post.path, [413, 429, 0].includes(post.status)]).toEqual([post.path, true]);
      // What the client got to send before the answer (the limit, and what loopback buffers took meanwhile), never
      // the 64 MB a server reading bodies whole would take.
      expect(post.pulled).toBeLessThan(BUFFERED);
    }
    expect(run.posts.filter((p) => p.status === 413).length).toBeGreaterThan(4);
    expect(run.replies.length).toBeGreaterThan(2);
    expect(new Set(run.replies)).toEqual(new Set(["too_large"]));
    expect((await fetch(`${server.endpoint}/api/health`)).status).toBe(200);
  }, 60_000);

  test("a body past the server's own limit is refused by the server itself, on any path", async () => {
    const json = await fetch(`${server.endpoint}/api/GenerateNamespaceToken`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pad: "x".repeat(JSON_BODY_LIMIT) }),
    });
    expect(json.status).toBe(413);
    expect(((await json.json()) as { error: string }).error).toBe(`Request body is larger than ${JSON_BODY_LIMIT} bytes.`);
    for (const path of ["/api/GenerateNamespaceToken", "/dashboard", "/"]) {
      const res = await fetch(`${server.endpoint}${path}`, { method: "POST", body: new Uint8Array(SERVER_BODY_LIMIT + 1) });
      expect([path, res.status]).toEqual([path, 413]);
    }
  });
});
