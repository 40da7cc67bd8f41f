import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { freePort } from "../../support/ports.ts";
import { requestHar, seedNamespaceToken, spawnServer } from "../../support/server-process.ts";
import { BUN, MAIN, ROOT, type Running, start } from "../harness.ts";

/**
 * Issue 20: `tapscope run --relay-threads N` relays and parses inbound connections on N threads. The same workload
 * (keep-alive connections, each with requests in order, some making an outbound call) is captured identically with
 * one thread and with two, both threads serve connections, and an outbound call keeps its inbound parent although
 * the two were relayed on different threads.
 */
const CONNECTIONS = 24;
const REQUESTS = 4;
const SEQUENTIAL_CALLS = 6;

/** An HTTP/1.1 client on one socket: requests in sequence, each response read whole (Content-Length). */
class KeepAliveClient {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.waiting?.();
    });
  }

  static open(port: number): Promise<KeepAliveClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => resolve(new KeepAliveClient(socket)));
      socket.once("error", reject);
    });
  }

  async request(method: string, path: string, body = ""): Promise<{ status: number; body: string }> {
    this.socket.write(`${method} ${path} HTTP/1.1\r\nHost: app.test\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    for (;;) {
      const end = this.buffered.indexOf("\r\n\r\n");
      if (end >= 0) {
        const head = this.buffered.subarray(0, end).toString();
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.buffered.length >= end + 4 + length) {
          const text = this.buffered.subarray(end + 4, end + 4 + length).toString();
          this.buffered = this.buffered.subarray(end + 4 + length);
          return { status: Number(head.split(" ")[1]), body: text };
        }
      }
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }

  close(): void {
    this.socket.end();
  }
}

const serveUpstream = () =>
  Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => new Response(`upstream saw ${new URL(req.url).search}`) });
let upstream: ReturnType<typeof Bun.serve>;
/** One upstream per call made alone, so each is a new connection (a connect() shows the program's requests in flight). */
let alone: Array<ReturnType<typeof Bun.serve>>;

beforeAll(() => {
  upstream = serveUpstream();
  alone = Array.from({ length: SEQUENTIAL_CALLS }, serveUpstream);
});
afterAll(() => {
  for (const server of [upstream, ...alone]) server.stop(true);
});

type Capture = { events: TracedEvent[]; stderr: string; answers: string[] };

/** The workload against the program on `port`; the program's answers, as its clients read them. */
async function workload(port: number): Promise<string[]> {
  const answers: string[] = [];
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      const client = await KeepAliveClient.open(port);
      for (let r = 0; r < REQUESTS; r++) {
        const answer =
          r === 1
            ? await client.request("POST", "/echo", `body of ${c}.${r}`)
            : r === 2
              ? await client.request("GET", `/call?to=${encodeURIComponent(`http://127.0.0.1:${upstream.port}/up?c=${c}`)}`)
              : await client.request("GET", `/hello?c=${c}&r=${r}`);
        answers.push(`${answer.status} ${answer.body}`);
      }
      client.close();
    }),
  );
  // One call at a time: its parent is then unambiguous (concurrent requests of one process share the newest as parent).
  for (let s = 0; s < SEQUENTIAL_CALLS; s++) {
    const client = await KeepAliveClient.open(port);
    const answer = await client.request("GET", `/call?to=${encodeURIComponent(`http://127.0.0.1:${alone[s]!.port}/seq?s=${s}`)}`);
    answers.push(`${answer.status} ${answer.body}`);
    client.close();
  }
  return answers;
}

const EVENTS = CONNECTIONS * (REQUESTS + 1) + SEQUENTIAL_CALLS * 2;

async function captureWorkload(threads: number): Promise<Capture> {
  const port = await freePort();
  const app: Running = start(["node", `${ROOT}/tests/agent/fixtures/node-server.mjs`, String(port)], {
    runArgs: ["--relay-threads", String(threads)],
  });
  await app.waitForOutput(/listening/);
  const answers = await workload(port);
  await app.waitForEvents(EVENTS);
  await app.stop();
  return { events: app.events(), stderr: app.stderr(), answers };
}

/**
 * The workload under `tapscope run --relay-threads 2` publishing to a real server (no --log, no --events-file: the
 * threads then send the server frames they encoded themselves); what the server stored, read back as a HAR.
 */
async function publishWorkload(): Promise<{
  entries: Array<{ request: { method: string; url: string }; response: { status: number } }>;
  stderr: string;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-relay-threads-"));
  const seeded = await seedNamespaceToken(dataDir, "relay-threads");
  const server = await spawnServer({ dataDir });
  try {
    const port = await freePort();
    const app = Bun.spawn(
      [BUN, MAIN, "run", "--relay-threads", "2", "--", "node", `${ROOT}/tests/agent/fixtures/node-server.mjs`, String(port)],
      {
        env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: seeded.token },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const reader = app.stdout.getReader();
    for (let out = ""; !out.includes("listening"); ) out += new TextDecoder().decode((await reader.read()).value);
    await workload(port);
    app.kill("SIGTERM");
    await app.exited;
    const stderr = await new Response(app.stderr).text();
    // Acknowledged means stored: all of them are there once tapscope has exited.
    const har = await (await requestHar(server.endpoint, seeded, 600_000)).json();
    return { entries: har.log.entries, stderr };
  } finally {
    await server.kill();
  }
}

/** What a user sees of an event, without what differs between any two runs (times, ids, ports, process ids). */
function shown(e: TracedEvent): string {
  return JSON.stringify([
    e.http_is_outgoing,
    e.http_req_method,
    e.http_req_path,
    e.http_resp_status_code,
    e.http_req_body,
    e.http_resp_body,
  ]);
}

describe("relay threads", () => {
  let one: Capture;
  let two: Capture;

  beforeAll(async () => {
    one = await captureWorkload(1);
    two = await captureWorkload(2);
  }, 60_000);

  test("two threads each serve some of the connections, and say so at exit", () => {
    const served = /2 relay threads served (\d+), (\d+) inbound connections/.exec(two.stderr);
    expect(served).not.toBeNull();
    const [a, b] = [Number(served![1]), Number(served![2])];
    expect(a + b).toBe(CONNECTIONS + SEQUENTIAL_CALLS);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    expect(one.stderr).not.toContain("relay threads served");
  });

  test("the program answers the same, and the captures are the same events", () => {
    expect(two.answers.toSorted()).toEqual(one.answers.toSorted());
    expect(two.events.length).toBe(one.events.length);
    expect(two.events.map(shown).toSorted()).toEqual(one.events.map(shown).toSorted());
  });

  test("within a connection the events keep the order of its requests", () => {
    for (const capture of [one, two]) {
      const byClient = new Map<string, TracedEvent[]>();
      for (const e of capture.events.filter((e) => !e.http_is_outgoing)) {
        byClient.set(e.http_client_addr, [...(byClient.get(e.http_client_addr) ?? []), e]);
      }
      expect(byClient.size).toBe(CONNECTIONS + SEQUENTIAL_CALLS);
      for (const events of [...byClient.values()].filter((list) => list.length === REQUESTS)) {
        const inOrder = events.toSorted((x, y) => x.time - y.time).map((e) => `${e.http_req_method} ${e.http_req_path.split("?")[0]}`);
        expect(inOrder).toEqual(["GET /hello", "POST /echo", "GET /call", "GET /hello"]);
      }
    }
  });

  test("publishing: the frames the threads encode reach the server, every event of the workload stored", async () => {
    const published = await publishWorkload();
    expect(published.stderr).toMatch(/2 relay threads served \d+, \d+ inbound connections/);
    expect(published.stderr).not.toContain("dropped");
    const seen = (list: Array<[string, string, number]>) => list.map((x) => x.join(" ")).toSorted();
    expect(seen(published.entries.map((e) => [e.request.method, new URL(e.request.url).pathname, e.response.status]))).toEqual(
      seen(one.events.map((e) => [e.http_req_method, e.http_req_path.split("?")[0]!, e.http_resp_status_code])),
    );
  }, 60_000);

  test("an outbound call made on the main thread has its inbound request, parsed on a relay thread, as parent", () => {
    for (const capture of [one, two]) {
      const byId = new Map(capture.events.map((e) => [e.event_id, e]));
      const calls = capture.events.filter((e) => e.http_is_outgoing);
      expect(calls.length).toBe(CONNECTIONS + SEQUENTIAL_CALLS);
      // Every call has an inbound request of the program as parent.
      const orphans = calls.filter((call) => byId.get(call.parent_event_id)?.http_is_outgoing !== false);
      expect(orphans.map((e) => `${e.http_req_path} parent "${e.parent_event_id}"`)).toEqual([]);
      // A call made alone has the very request that made it (its query names the call) as parent.
      const madeAlone = calls.filter((e) => e.http_req_path.startsWith("/seq?"));
      expect(madeAlone.length).toBe(SEQUENTIAL_CALLS);
      for (const call of madeAlone) expect(decodeURIComponent(byId.get(call.parent_event_id)!.http_req_path)).toEndWith(call.http_req_path);
    }
  });
});
