/**
 * How the TLS relay leg could terminate the program's TLS, measured: a keep-alive loop of 1 B requests (a TLS
 * client writes 1 byte, the TLS peer echoes it) direct, through the TlsRelay (node:tls over a Duplex), and through
 * the alternative of a loopback Bun TLS listener the relay pipes the program's bytes into; and new connections
 * (the TLS handshake as the client sees it). The clients, the relays and the peer run in three processes, as the
 * traced program, the supervisor and the peer would. Usage: bun bench/tls-leg/run.ts [requests, default 4000]
 * [--smoke: 50 requests and 20 new connections per round].
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { legOptions } from "../../src/agent/relay/leg-options.ts";
import { type LegData, Pipe } from "../../src/agent/relay/pipe.ts";
import { type Peer, TlsRelay, TlsRelayContext } from "../../src/agent/relay/tls-relay.ts";
import { makeCa, makeLeaf, type Pem } from "../../tests/agent/tls-pki.ts";
import { isSmoke, positional } from "../options.ts";

const isPeer = positional[0] === "--peer";
const isUpstream = positional[0] === "--upstream";
const REQUESTS = Number(positional[isPeer ? 1 : 0] ?? (isSmoke ? 50 : 4000));
const CONNECTIONS = isSmoke ? 20 : 200;
const NAME = "upstream.test";
type Pki = { upCa: Pem; runCa: Pem; upLeaf: Pem; minted: Pem };
type Ports = { relay: number; loopRelay: number; opaque: number };

if (isUpstream) await runUpstream();
else if (isPeer) await runPeer();
else await runRelays();

/** The TLS peer: echoes every byte. */
async function runUpstream(): Promise<void> {
  const input = Bun.stdin.stream().getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await input.read()).value);
  const { upLeaf } = JSON.parse(text) as Pki;
  const upstream = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: upLeaf.cert, key: upLeaf.key },
    socket: {
      data(socket, chunk) {
        socket.write(chunk);
      },
    },
  });
  console.log(JSON.stringify({ port: upstream.port }));
}

/** The parent: the relays, as the supervisor would run them. */
async function runRelays(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tls-leg-bench-"));
  const pki: Pki = {
    upCa: makeCa(dir, "upca"),
    runCa: makeCa(dir, "runca"),
    upLeaf: makeLeaf(dir, "upca", "upstream", [`DNS:${NAME}`]),
    minted: makeLeaf(dir, "runca", "minted", [`DNS:${NAME}`]),
  };
  rmSync(dir, { recursive: true, force: true });
  const child = Bun.spawn([process.execPath, import.meta.path, "--peer", String(REQUESTS), ...(isSmoke ? ["--smoke"] : [])], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  child.stdin.write(`${JSON.stringify(pki)}\n`);
  child.stdin.flush();
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) out += new TextDecoder().decode((await reader.read()).value);
  const peer: Peer = { hostname: "127.0.0.1", port: (JSON.parse(out.slice(0, out.indexOf("\n"))) as { port: number }).port };
  const { relay, loopRelay, opaque } = startRelays(pki, peer);
  const ports: Ports = { relay: relay.port, loopRelay: loopRelay.port, opaque: opaque.port };
  child.stdin.write(`${JSON.stringify(ports)}\n`);
  child.stdin.flush();
  process.stdout.write(out.slice(out.indexOf("\n") + 1));
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    process.stdout.write(value);
  }
  await child.exited;
  process.exit(0);
}

function startRelays({ upCa, minted }: Pki, peer: Peer) {
  // The TlsRelay as built.
  const ctx = new TlsRelayContext({ ca: [upCa.cert], certFor: () => minted });
  let id = 0;
  const info = () => ({
    id: ++id,
    direction: "outbound" as const,
    clientAddr: "",
    serverAddr: "",
    pid: 0,
    startedAt: 0,
    connectedAt: 0,
  });
  const relay = Bun.listen<LegData>(
    legOptions(
      { hostname: "127.0.0.1", port: 0 },
      {
        open(socket: Socket<LegData>) {
          new TlsRelay(ctx, info(), null, peer).attachClient(socket);
        },
      },
    ),
  );

  // The alternative: a loopback Bun TLS listener terminates; the relay moves ciphertext to it and plaintext on.
  type Hop = { other: Socket<Hop> | null; pending: Uint8Array[] };
  const hopHandlers = {
    data(socket: Socket<Hop>, chunk: Uint8Array) {
      const other = socket.data.other;
      if (other) other.write(chunk);
      else socket.data.pending.push(chunk);
    },
    close(socket: Socket<Hop>) {
      socket.data.other?.end();
    },
  };
  function join2(a: Socket<Hop>, b: Socket<Hop>): void {
    a.data.other = b;
    b.data.other = a;
    for (const chunk of a.data.pending.splice(0)) b.write(chunk);
    for (const chunk of b.data.pending.splice(0)) a.write(chunk);
  }
  const terminator = Bun.listen<Hop>({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: minted.cert, key: minted.key },
    socket: {
      ...hopHandlers,
      open(plain) {
        plain.data = { other: null, pending: [] };
        Bun.connect<Hop>({
          ...peer,
          data: { other: null, pending: [] },
          tls: { serverName: NAME, ca: [upCa.cert] },
          socket: {
            ...hopHandlers,
            handshake(up) {
              join2(plain, up);
            },
          },
        });
      },
    },
  });
  const loopRelay = Bun.listen<Hop>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      ...hopHandlers,
      open(client) {
        client.data = { other: null, pending: [] };
        Bun.connect<Hop>({
          hostname: "127.0.0.1",
          port: terminator.port,
          data: { other: null, pending: [] },
          socket: {
            ...hopHandlers,
            open(inner) {
              join2(client, inner);
            },
          },
        });
      },
    },
  });

  // Today's relay: TLS bytes moved opaque by a Pipe, the cost of the extra hop alone.
  const opaque = Bun.listen<LegData>(
    legOptions(
      { hostname: "127.0.0.1", port: 0 },
      {
        open(socket: Socket<LegData>) {
          const pipe = new Pipe(info(), null);
          pipe.attach("client", socket);
          Bun.connect<LegData>(legOptions(peer, { open: (server: Socket<LegData>) => pipe.attach("server", server) }));
        },
      },
    ),
  );
  return { relay, loopRelay, opaque };
}

/** The child: the TLS peer and the clients, in a process of their own as the traced program and its peer would be. */
async function runPeer(): Promise<void> {
  const input = Bun.stdin.stream().getReader();
  let text = "";
  const nextLine = async (): Promise<string> => {
    while (!text.includes("\n")) text += new TextDecoder().decode((await input.read()).value);
    const line = text.slice(0, text.indexOf("\n"));
    text = text.slice(text.indexOf("\n") + 1);
    return line;
  };
  const { upCa, runCa, upLeaf } = JSON.parse(await nextLine()) as Pki;
  // The peer in a third process: the program, the relay and the peer each pay their own wake-ups, as in a real run.
  const server = Bun.spawn([process.execPath, import.meta.path, "--upstream"], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  server.stdin.write(`${JSON.stringify({ upCa, runCa, upLeaf })}\n`);
  server.stdin.flush();
  const serverOut = server.stdout.getReader();
  let first = "";
  while (!first.includes("\n")) first += new TextDecoder().decode((await serverOut.read()).value);
  const upstream = JSON.parse(first) as { port: number };
  console.log(JSON.stringify({ port: upstream.port }));
  const ports = JSON.parse(await nextLine()) as Ports;
  const variants = [
    ["direct", upstream.port, upCa.cert],
    ["tls-relay (node:tls over Duplex)", ports.relay, runCa.cert],
    ["loopback Bun TLS listener", ports.loopRelay, runCa.cert],
    ["opaque pipe (no decryption)", ports.opaque, upCa.cert],
  ] as const;
  // Warm up, then alternate rounds so machine noise falls on every variant alike.
  for (const [, port, ca] of variants) await requestLoop(port, ca);
  const results = new Map<string, { req: number[]; conn: number[] }>();
  for (let round = 0; round < 3; round++) {
    for (const [name, port, ca] of variants) {
      const entry = results.get(name) ?? { req: [], conn: [] };
      entry.req.push(...(await requestLoop(port, ca)));
      entry.conn.push(...(await connectLoop(port, ca)));
      results.set(name, entry);
    }
  }
  const base = results.get("direct")!;
  console.log(`keep-alive 1 B round trips: ${REQUESTS * 3} per variant; new connections: ${CONNECTIONS * 3}`);
  for (const [name] of variants) {
    const r = results.get(name)!;
    const line = [
      name.padEnd(34),
      `req p50 ${pct(r.req, 0.5).toFixed(0)} µs (+${(pct(r.req, 0.5) - pct(base.req, 0.5)).toFixed(0)})`,
      `p99 ${pct(r.req, 0.99).toFixed(0)} µs (+${(pct(r.req, 0.99) - pct(base.req, 0.99)).toFixed(0)})`,
      `handshake p50 ${pct(r.conn, 0.5).toFixed(0)} µs (+${(pct(r.conn, 0.5) - pct(base.conn, 0.5)).toFixed(0)})`,
    ];
    console.log(line.join("  "));
  }
  server.kill();
  process.exit(0);
}

type Client = { socket: Socket<Client>; wait: ((value: number) => void) | null; connectedAt: number };

function dial(port: number, ca: string): Promise<Client> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    Bun.connect<Client>({
      hostname: "127.0.0.1",
      port,
      tls: { serverName: NAME, ca: [ca] },
      socket: {
        handshake(socket, success, error) {
          if (!success || error) reject(error ?? new Error("handshake failed"));
          socket.data = { socket, wait: null, connectedAt: performance.now() - t0 };
          resolve(socket.data);
        },
        data(socket) {
          const wait = socket.data.wait;
          socket.data.wait = null;
          wait?.(performance.now());
        },
        error(_socket, error) {
          reject(error);
        },
      },
    }).catch(reject);
  });
}

async function requestLoop(port: number, ca: string): Promise<number[]> {
  const client = await dial(port, ca);
  const byte = new Uint8Array([0x61]);
  const samples: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const t0 = performance.now();
    const done = new Promise<number>((resolve) => {
      client.wait = resolve;
    });
    client.socket.write(byte);
    samples.push(((await done) - t0) * 1000);
  }
  client.socket.end();
  return samples;
}

async function connectLoop(port: number, ca: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const client = await dial(port, ca);
    samples.push(client.connectedAt * 1000);
    client.socket.end();
  }
  return samples;
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}
