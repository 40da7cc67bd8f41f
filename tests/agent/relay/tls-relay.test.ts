import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { constants } from "node:crypto";
import { createSecureServer, connect as h2connect, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import type { Socket, TCPSocketListener } from "bun";
import type { Exchange } from "~/agent/parse/exchange.ts";
import { parseClientHello } from "~/agent/parse/sniff.ts";
import { legOptions } from "~/agent/relay/leg-options.ts";
import type { ConnectionInfo, ConnectionObserver, ConnectionTap } from "~/agent/relay/observer.ts";
import type { LegData } from "~/agent/relay/pipe.ts";
import { type Peer, type TlsOutcome, TlsRelay, type TlsRelayConfig, TlsRelayContext } from "~/agent/relay/tls-relay.ts";
import { ParentTracker } from "~/agent/tracer/parent-tracker.ts";
import { emptyTracerStats } from "~/agent/tracer/stats.ts";
import { type FinishedWork, TracedConnection, type TracedConnectionDeps } from "~/agent/tracer/traced-connection.ts";
import { TokenBucket } from "~/lib/rate-limit.ts";
import { scratchDir } from "../harness.ts";
import { fakeProcess } from "../parse/helpers.ts";
import { makeCa, makeLeaf, type Pem } from "../tls-pki.ts";

const NAME = "upstream.test";
const H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

type Seen = { info: ConnectionInfo; fromClient: Buffer; fromServer: Buffer; order: boolean[]; closed: boolean };

let scratch: ReturnType<typeof scratchDir>;
let upCa: Pem;
let runCa: Pem;
let upLeaf: Pem;
let expiredLeaf: Pem;
let wrongNameLeaf: Pem;
let clientLeaf: Pem;
let minted: Pem;
const closers: Array<() => void> = [];

beforeAll(() => {
  scratch = scratchDir("tapscope-tls-relay-");
  const dir = scratch.dir;
  upCa = makeCa(dir, "upca");
  runCa = makeCa(dir, "runca");
  upLeaf = makeLeaf(dir, "upca", "upstream", [`DNS:${NAME}`, "IP:127.0.0.1"]);
  expiredLeaf = makeLeaf(dir, "upca", "expired", [`DNS:${NAME}`, "IP:127.0.0.1"], true);
  wrongNameLeaf = makeLeaf(dir, "upca", "wrong", ["DNS:other.test"]);
  clientLeaf = makeLeaf(dir, "upca", "client", ["DNS:client.test"]);
  minted = makeLeaf(dir, "runca", "minted", [`DNS:${NAME}`, "IP:127.0.0.1"]);
});

afterAll(() => {
  for (const close of closers) close();
  scratch.cleanup();
});

/** A relay listener whose every connection is a TlsRelay to `peer`; taps and outcomes are recorded. */
function startRelay(peer: Peer, config: Partial<TlsRelayConfig> = {}, alsoTo?: (info: ConnectionInfo) => ConnectionTap) {
  const seen: Seen[] = [];
  const outcomes: TlsOutcome[] = [];
  const names: string[] = [];
  const ctx = new TlsRelayContext({
    ca: [upCa.cert],
    certFor(serverName) {
      names.push(serverName);
      return minted;
    },
    ...config,
  });
  const observer: ConnectionObserver = {
    onOpen(info) {
      const s: Seen = { info, fromClient: Buffer.alloc(0), fromServer: Buffer.alloc(0), order: [], closed: false };
      seen.push(s);
      const also = alsoTo?.(info);
      return {
        onData(fromClient, chunk, at) {
          also?.onData(fromClient, chunk, at);
          s.order.push(fromClient);
          if (fromClient) s.fromClient = Buffer.concat([s.fromClient, chunk]);
          else s.fromServer = Buffer.concat([s.fromServer, chunk]);
        },
        onEnd(fromClient, at) {
          also?.onEnd?.(fromClient, at);
        },
        onClose(at, error) {
          also?.onClose(at, error);
          s.closed = true;
        },
      };
    },
  };
  let id = 0;
  const listener: TCPSocketListener<LegData> = Bun.listen<LegData>(
    legOptions(
      { hostname: "127.0.0.1", port: 0 },
      {
        open(socket: Socket<LegData>) {
          const info: ConnectionInfo = {
            id: ++id,
            direction: "outbound",
            clientAddr: `127.0.0.1:${socket.remotePort}`,
            serverAddr: `${peer.hostname}:${peer.port}`,
            pid: 0,
            startedAt: 0,
            connectedAt: 0,
          };
          new TlsRelay(ctx, info, observer, peer, (o) => outcomes.push(o)).attachClient(socket);
        },
      },
    ),
  );
  closers.push(() => listener.stop(true));
  return { port: listener.port, seen, outcomes, names };
}

/** A Bun TLS server answering "<method> <path> <body>" over HTTP/1.1. */
function startHttpsServer(leaf: Pem, extra: { requestCert?: boolean } = {}) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: leaf.cert, key: leaf.key, ...(extra.requestCert ? { requestCert: true, rejectUnauthorized: true, ca: upCa.cert } : {}) },
    async fetch(req) {
      const body = await req.text();
      return new Response(`${req.method} ${new URL(req.url).pathname} ${body}`);
    },
  });
  closers.push(() => server.stop(true));
  if (!server.port) throw new Error("the test server has no port");
  return server.port;
}

type Answer = { status: number; body: string } | { error: string };

function httpsCall(
  port: number,
  method: string,
  path: string,
  options: { ca?: string[]; body?: string; agent?: import("node:https").Agent; cert?: Pem } = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        servername: NAME,
        method,
        path,
        ca: options.ca ?? [upCa.cert, runCa.cert],
        agent: options.agent ?? false,
        ...(options.cert ? { cert: options.cert.cert, key: options.cert.key } : {}),
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      },
    );
    req.on("error", (error: Error & { code?: string }) => resolve({ error: error.code ?? error.message }));
    req.end(options.body);
  });
}

/** A TCP proxy to `port` that forwards each direction in random pieces of 1-64 bytes, one piece per turn. */
function chopper(port: number, rand: (n: number) => number) {
  type Ends = { other: Socket<Ends> | null; queue: Uint8Array[]; pumping: boolean; ended: boolean };
  const pump = (from: Socket<Ends>) => {
    const me = from.data;
    if (me.pumping) return;
    me.pumping = true;
    const step = () => {
      const to = me.other;
      const head = me.queue[0];
      if (!to || !head) {
        me.pumping = false;
        if (to && me.ended) to.end();
        return;
      }
      const n = 1 + rand(64);
      to.write(head.subarray(0, n));
      if (head.length > n) me.queue[0] = head.subarray(n);
      else me.queue.shift();
      setImmediate(step);
    };
    step();
  };
  const listener = Bun.listen<Ends>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { other: null, queue: [], pumping: false, ended: false };
        void Bun.connect<Ends>({
          hostname: "127.0.0.1",
          port,
          data: { other: client, queue: [], pumping: false, ended: false },
          socket: {
            open(server) {
              client.data.other = server;
              pump(client);
            },
            data(server, chunk) {
              server.data.queue.push(new Uint8Array(chunk));
              pump(server);
            },
            end(server) {
              server.data.ended = true;
              pump(server);
            },
            close() {
              client.end();
            },
          },
        });
      },
      data(client, chunk) {
        client.data.queue.push(new Uint8Array(chunk));
        pump(client);
      },
      end(client) {
        client.data.ended = true;
        pump(client);
      },
      close(client) {
        client.data.other?.end();
      },
    },
  });
  closers.push(() => listener.stop(true));
  return { port: listener.port };
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await Bun.sleep(5);
  }
}

describe("TLS relay", () => {
  test("the peer is offered the key-exchange groups the program offered, no more", async () => {
    let upstreamHello: Uint8Array | null = null;
    const peer = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket, chunk) {
          upstreamHello ??= new Uint8Array(chunk);
          socket.terminate();
        },
      },
    });
    closers.push(() => peer.stop(true));
    const relay = startRelay({ hostname: "127.0.0.1", port: peer.port });
    const program = tlsConnect({ host: "127.0.0.1", port: relay.port, servername: NAME, ecdhCurve: "P-256", ca: [runCa.cert] });
    program.on("error", () => {});
    await until(() => upstreamHello !== null);
    program.destroy();
    const hello = parseClientHello(upstreamHello!, upstreamHello!.length);
    expect(hello).toMatchObject({ serverName: NAME, groups: [0x0017] });
  });

  test("a second connection to a peer resumes the upstream session (no second full handshake), still decrypted", async () => {
    // The peer says whether it resumed: Bun's TLS server knows it per connection.
    const peer = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: upLeaf.cert, key: upLeaf.key },
      socket: {
        data(socket) {
          const body = `resumed ${socket.isSessionReused()}`;
          socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
          socket.end();
        },
      },
    });
    closers.push(() => peer.stop(true));
    const relay = startRelay({ hostname: "127.0.0.1", port: peer.port });
    const answers: Answer[] = [];
    for (let i = 0; i < 3; i++) answers.push(await httpsCall(relay.port, "GET", `/${i}`));
    expect(answers).toEqual([
      { status: 200, body: "resumed false" },
      { status: 200, body: "resumed true" },
      { status: 200, body: "resumed true" },
    ]);
    await until(() => relay.outcomes.length === 3);
    expect(relay.outcomes.map((o) => o.kind)).toEqual(["decrypted", "decrypted", "decrypted"]);
  });

  test("decrypts HTTP/1.1 GET and POST with bodies over one keep-alive connection", async () => {
    const upPort = startHttpsServer(upLeaf);
    const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
    const { Agent } = await import("node:https");
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = await httpsCall(relay.port, "GET", "/hello", { agent });
    const post = await httpsCall(relay.port, "POST", "/charges", { agent, body: "amount=42" });
    agent.destroy();
    expect(get).toEqual({ status: 200, body: "GET /hello " });
    expect(post).toEqual({ status: 200, body: "POST /charges amount=42" });
    await until(() => relay.seen[0]?.closed === true);
    expect(relay.seen).toHaveLength(1);
    const conn = relay.seen[0]!;
    const request = conn.fromClient.toString();
    expect(request).toStartWith("GET /hello HTTP/1.1\r\n");
    expect(request).toContain("POST /charges HTTP/1.1\r\n");
    expect(request).toEndWith("amount=42");
    expect(conn.fromServer.toString()).toContain("POST /charges amount=42");
    expect(conn.info.tls?.serverName).toBe(NAME);
    expect(conn.info.tls!.handshakeDoneAt).toBeGreaterThan(conn.info.tls!.handshakeStartedAt);
    expect(relay.outcomes).toEqual([
      { kind: "decrypted", serverName: NAME, alpn: expect.any(String), handshakeMicros: expect.any(Number) },
    ]);
    expect(relay.names).toEqual([NAME]);
  });

  test("h2 by ALPN: the peer's choice reaches the client and the observer sees the preface and frames", async () => {
    const server = createSecureServer({ cert: upLeaf.cert, key: upLeaf.key });
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      let body = "";
      stream.on("data", (c: Buffer) => {
        body += c.toString();
      });
      stream.on("end", () => {
        stream.respond({ ":status": 200, "x-path": String(headers[":path"]) });
        stream.end(`h2 ${headers[":method"]} ${body}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => server.close());
    const work: FinishedWork[] = [];
    let eventId = 0;
    const deps: TracedConnectionDeps = {
      payloadLimit: 1024,
      recordEmptyConnections: false,
      webSocketBudget: { ratePerSecond: 0, burst: 0 },
      decodeBudget: new TokenBucket({ ratePerSecond: 0, burst: 0 }, 0),
      stats: emptyTracerStats(),
      parents: new ParentTracker<Exchange>(),
      enqueue: (w) => work.push(w),
      newEventId: () => `e${++eventId}`,
      processInfo: fakeProcess,
    };
    const relay = startRelay({ hostname: "127.0.0.1", port: (server.address() as AddressInfo).port }, {}, (info) => {
      deps.stats.openConnections++;
      return new TracedConnection(info, fakeProcess(0), deps);
    });
    const session = h2connect(`https://127.0.0.1:${relay.port}`, { ca: [runCa.cert], servername: NAME });
    const call = (method: string, body?: string) =>
      new Promise<string>((resolve, reject) => {
        const stream = session.request({ ":method": method, ":path": "/rpc" });
        let text = "";
        stream.on("data", (c: Buffer) => {
          text += c.toString();
        });
        stream.on("end", () => resolve(text));
        stream.on("error", reject);
        stream.end(body);
      });
    const answers = await Promise.all([call("GET"), call("POST", "ping")]);
    expect(answers).toEqual(["h2 GET ", "h2 POST ping"]);
    expect(session.alpnProtocol).toBe("h2");
    session.close();
    await until(() => relay.seen[0]?.closed === true);
    const conn = relay.seen[0]!;
    expect(conn.fromClient.subarray(0, H2_PREFACE.length).toString("latin1")).toBe(H2_PREFACE);
    // The first frame after the preface is the client's SETTINGS (type 4), in the clear.
    expect(conn.fromClient[H2_PREFACE.length + 3]).toBe(4);
    expect(conn.fromServer[3]).toBe(4);
    expect(conn.order[0]).toBe(true);
    expect(conn.fromServer.includes(Buffer.from("h2 POST ping"))).toBe(true);
    expect(relay.outcomes[0]).toMatchObject({ kind: "decrypted", alpn: "h2" });
    // The tracer's own h2 parser reads the plaintext unchanged: one exchange per stream.
    const exchanges = work.flatMap((w) => (w.kind === "http" ? [w.ex] : []));
    expect(exchanges.map((ex) => `${ex.httpVersion} ${ex.request.method} ${ex.request.target} ${ex.response?.status}`).sort()).toEqual([
      "2 GET /rpc 200",
      "2 POST /rpc 200",
    ]);
    expect(work.filter((w) => w.kind === "tcp")).toHaveLength(0);
  });

  test("10 MiB each way through one connection: backpressure on both legs, bytes intact", async () => {
    const size = 10 * 1024 * 1024;
    const blob = new Uint8Array(size);
    for (let i = 0; i < size; i++) blob[i] = (i * 7 + (i >> 12)) & 0xff;
    const digest = new Bun.CryptoHasher("sha256").update(blob).digest("hex");
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: upLeaf.cert, key: upLeaf.key },
      async fetch(req) {
        if (req.method === "POST") {
          const got = new Uint8Array(await req.arrayBuffer());
          return new Response(`${got.length} ${new Bun.CryptoHasher("sha256").update(got).digest("hex")}`);
        }
        return new Response(blob);
      },
    });
    closers.push(() => server.stop(true));
    const relay = startRelay({ hostname: "127.0.0.1", port: server.port ?? 0 });
    const download = await new Promise<Buffer>((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port: relay.port, servername: NAME, path: "/big", ca: [runCa.cert], agent: false },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (c: Buffer) => parts.push(c));
          res.on("end", () => resolve(Buffer.concat(parts)));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(download.length).toBe(size);
    expect(new Bun.CryptoHasher("sha256").update(download).digest("hex")).toBe(digest);
    const upload = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port: relay.port, servername: NAME, method: "POST", path: "/up", ca: [runCa.cert], agent: false },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => {
            text += c.toString();
          });
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end(Buffer.from(blob));
    });
    expect(upload).toBe(`${size} ${digest}`);
    await until(() => relay.seen.length === 2 && relay.seen.every((s) => s.closed));
    expect(relay.seen[0]!.fromServer.length).toBeGreaterThan(size);
    expect(relay.seen[1]!.fromClient.length).toBeGreaterThan(size);
  }, 30_000);

  test("fuzz: TLS records cut at random points on both legs (every read 1-64 bytes), decrypted exactly", async () => {
    // A seeded generator, so a failure names its seed.
    for (const seed of [1, 7, 42]) {
      let state = seed;
      const rand = (n: number) => {
        state = (state * 1103515245 + 12345) & 0x7fffffff;
        return state % n;
      };
      const server = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        tls: { cert: upLeaf.cert, key: upLeaf.key },
        async fetch(req) {
          const body = await req.text();
          return new Response(`${req.method} ${new URL(req.url).pathname} ${body.length} ${body.slice(-12)}`);
        },
      });
      closers.push(() => server.stop(true));
      const upstream = chopper(server.port ?? 0, rand);
      const relay = startRelay({ hostname: "127.0.0.1", port: upstream.port });
      const front = chopper(relay.port, rand);
      const { Agent } = await import("node:https");
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const sizes = [0, 1, 100, 5000, 70_000];
      const answers: Answer[] = [];
      for (const size of sizes) answers.push(await httpsCall(front.port, "POST", `/n${size}`, { agent, body: "x".repeat(size) }));
      agent.destroy();
      expect(answers).toEqual(sizes.map((n) => ({ status: 200, body: `POST /n${n} ${n} ${"x".repeat(Math.min(12, n))}` })));
      await until(() => relay.seen.length === 1 && relay.seen[0]!.closed);
      const seen = relay.seen[0]!;
      for (const n of sizes) expect(seen.fromClient.includes(Buffer.from(`POST /n${n} HTTP/1.1`))).toBe(true);
      expect(relay.outcomes).toEqual([
        { kind: "decrypted", serverName: NAME, alpn: expect.any(String), handshakeMicros: expect.any(Number) },
      ]);
    }
  }, 60_000);

  for (const [label, leaf] of [
    ["expired", () => expiredLeaf],
    ["wrong-name", () => wrongNameLeaf],
  ] as const) {
    test(`an ${label} upstream certificate is passed through: the client sees the same error as direct`, async () => {
      const upPort = startHttpsServer(leaf());
      const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
      const direct = await httpsCall(upPort, "GET", "/");
      const relayed = await httpsCall(relay.port, "GET", "/");
      expect("error" in direct).toBe(true);
      expect(relayed).toEqual(direct);
      expect(relay.outcomes).toEqual([
        { kind: "passthrough", serverName: NAME, reason: "upstream certificate not trusted", detail: expect.any(String) },
      ]);
      // Passed through opaque: the observer saw the ciphertext (a ClientHello), not plaintext.
      await until(() => relay.seen[0]?.closed === true);
      expect(relay.seen[0]!.fromClient[0]).toBe(0x16);
      expect(relay.seen[0]!.info.tls).toBeUndefined();
    });
  }

  test("a client that drops the connection without a word (Bun's own client refusing our CA): a close, not a refusal of the host", async () => {
    const upPort = startHttpsServer(upLeaf);
    const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
    const answer = await httpsCall(relay.port, "GET", "/", { ca: [upCa.cert] });
    expect(answer).toHaveProperty("error");
    await until(() => relay.outcomes.length > 0);
    await Bun.sleep(50);
    expect(relay.outcomes).toEqual([
      { kind: "failed", serverName: NAME, reason: "client closed during the handshake", detail: expect.any(String) },
    ]);
  });

  test("mutual TLS upstream is passed through: the program's own client certificate still works", async () => {
    const upPort = startHttpsServer(upLeaf, { requestCert: true });
    const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
    const withCert = await httpsCall(relay.port, "GET", "/mtls", { cert: clientLeaf });
    expect(withCert).toEqual({ status: 200, body: "GET /mtls " });
    expect(relay.outcomes[0]).toMatchObject({ kind: "passthrough", reason: "mutual TLS" });
    const directNoCert = await httpsCall(upPort, "GET", "/");
    const relayedNoCert = await httpsCall(relay.port, "GET", "/");
    expect(relayedNoCert).toEqual(directNoCert);
  });

  test.skipIf(!Bun.which("curl"))(
    "curl (OpenSSL): GET and POST decrypted; without the run's CA it fails as it would and is reported",
    async () => {
      const upPort = startHttpsServer(upLeaf);
      const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
      const curl = async (args: string[]) => {
        const proc = Bun.spawn(["curl", "-sS", "--resolve", `${NAME}:${relay.port}:127.0.0.1`, ...args], {
          stdout: "pipe",
          stderr: "pipe",
        });
        return { code: await proc.exited, out: await new Response(proc.stdout).text() };
      };
      const url = `https://${NAME}:${relay.port}/curl`;
      const cacert = join(scratch.dir, "runca.crt");
      expect(await curl(["--http2", "--cacert", cacert, url])).toEqual({ code: 0, out: "GET /curl " });
      expect(await curl(["--http1.1", "--cacert", cacert, "-d", "x=1", url])).toEqual({ code: 0, out: "POST /curl x=1" });
      expect((await curl(["--cacert", join(scratch.dir, "upca.crt"), url])).code).toBe(60);
      await until(() => relay.outcomes.length === 3);
      await Bun.sleep(50);
      // Bun.serve offers no ALPN, so none is chosen and curl speaks HTTP/1.1 as it would direct.
      expect(relay.outcomes.map((o) => (o.kind === "decrypted" ? `decrypted ${o.alpn}` : o.reason))).toEqual([
        "decrypted ",
        "decrypted ",
        "client rejected the certificate",
      ]);
    },
  );

  test("an SNI-less client to an IP peer: verified against the IP, minted for the IP", async () => {
    const upPort = startHttpsServer(upLeaf);
    const relay = startRelay({ hostname: "127.0.0.1", port: upPort });
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port: relay.port, ca: [runCa.cert] }, () => {
        socket.write("GET /ip HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
      });
      let text = "";
      socket.on("data", (c: Buffer) => {
        text += c.toString();
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer).toEndWith("GET /ip ");
    expect(relay.outcomes[0]).toMatchObject({ kind: "decrypted", serverName: "127.0.0.1" });
    expect(relay.names).toEqual(["127.0.0.1"]);
  });

  test("mutual TLS over TLS 1.2 (the refusal comes inside the handshake) is passed through as well", async () => {
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      tls: {
        cert: upLeaf.cert,
        key: upLeaf.key,
        requestCert: true,
        rejectUnauthorized: true,
        ca: upCa.cert,
        secureOptions: constants.SSL_OP_NO_TLSv1_3,
      },
      socket: {
        data(socket, chunk) {
          socket.write(chunk);
        },
      },
    });
    closers.push(() => server.stop(true));
    const relay = startRelay({ hostname: "127.0.0.1", port: server.port });
    const echoed = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect(
        { host: "127.0.0.1", port: relay.port, servername: NAME, ca: [upCa.cert], cert: clientLeaf.cert, key: clientLeaf.key },
        () => socket.write("hello"),
      );
      socket.on("data", (c: Buffer) => {
        resolve(c.toString());
        socket.destroy();
      });
      socket.on("error", reject);
    });
    expect(echoed).toBe("hello");
    expect(relay.outcomes[0]).toMatchObject({ kind: "passthrough", serverName: NAME, reason: "mutual TLS" });
  });

  test("a peer that never answers the handshake: passed through after the timeout, nothing hangs", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    closers.push(() => silent.stop(true));
    const relay = startRelay({ hostname: "127.0.0.1", port: silent.port }, { handshakeTimeoutMs: 150 });
    const socket = tlsConnect({ host: "127.0.0.1", port: relay.port, servername: NAME, ca: [runCa.cert] });
    socket.on("error", () => {});
    await until(() => relay.outcomes.length > 0);
    expect(relay.outcomes[0]).toMatchObject({ kind: "passthrough", reason: "upstream handshake timed out" });
    socket.destroy();
  });
});
