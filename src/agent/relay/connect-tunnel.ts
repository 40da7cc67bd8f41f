import type { Socket } from "bun";
import type { TlsInterception } from "../tls/interception.ts";
import { legOptions } from "./leg-options.ts";
import { type ConnectionInfo, type ConnectionObserver, type ConnectionTap, nowMicros } from "./observer.ts";
import { type LegData, type LegOwner, Pipe, type Side } from "./pipe.ts";
import { TlsGate } from "./tls-gate.ts";
import type { Peer, ProxyRoute } from "./tls-relay.ts";

/**
 * A connection to a forward proxy that opens with `CONNECT host:port`. The request and the proxy's answer are relayed
 * as they come (and shown to the tracer as this connection's); a 2xx answer makes the rest a connection of its own to
 * the named authority, over the same sockets: its first bytes are sniffed as for a direct connection (a ClientHello
 * goes to the TLS relay, verified for that authority; plain HTTP is parsed), its exchanges name the CONNECT as their
 * parent, and the CONNECT lasts as long as the tunnel. A refusal (407, 403) keeps the connection HTTP: a client that
 * sends its credentials and asks again on it is followed. Anything this cannot follow becomes the plain pipe, with
 * every byte in order.
 */
const MAX_HEAD = 64 * 1024;
/** Client bytes held while the proxy has not answered (a client that does not wait). */
const MAX_HELD = 1 << 20;
const CRLFCRLF = [13, 10, 13, 10];
const CONNECT_LINE = /^CONNECT ([^\s]+) HTTP\/1\.[01]\r\n/;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})[ \r]/;

export type Authority = { host: string; port: number; text: string };

/** `host:port` or `[v6]:port`, as a CONNECT names it. */
export function parseAuthority(text: string): Authority | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+(?:%[\w.-]+)?)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65_535) return null;
  return { host: (m[1] ?? m[2])!, port, text };
}

function findHeadEnd(buf: Uint8Array, len: number, from: number): number {
  for (let i = Math.max(0, from - 3); i + 3 < len; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i + CRLFCRLF.length;
  }
  return -1;
}

/** A growing buffer for one head. */
class Gather {
  buf = new Uint8Array(0);
  len = 0;
  add(chunk: Uint8Array): number {
    const from = this.len;
    if (this.len + chunk.length > this.buf.length) {
      const grown = new Uint8Array(Math.max(this.buf.length * 2, this.len + chunk.length, 512));
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    this.buf.set(chunk, this.len);
    this.len += chunk.length;
    return from;
  }
  text(end: number): string {
    return Buffer.from(this.buf.buffer, this.buf.byteOffset, end).toString("latin1");
  }
  reset(): void {
    this.len = 0;
  }
}

export type TunnelDeps = {
  interception: TlsInterception | null;
  observer: ConnectionObserver | null;
  nextConnectionId: () => number;
};

export class ConnectTunnel implements LegOwner {
  private state: "request" | "response" | "body" | "done" = "request";
  private client: Socket<LegData> | null = null;
  private server: Socket<LegData> | null = null;
  private serverNoDelay = true;
  private tap: ConnectionTap | null = null;
  private isOpened = false;
  private readonly request = new Gather();
  private readonly response = new Gather();
  private connectRequest: Uint8Array | null = null;
  private authority: Authority | null = null;
  private requestStartedAt = 0;
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  /** Bytes for a side whose socket is not there yet or took only part of a write. */
  private readonly pending: Record<Side, Uint8Array[]> = { client: [], server: [] };
  private bodyLeft = 0;
  private readonly ends: Side[] = [];

  constructor(
    /** The proxy connection's pipe (made for connect()): the plain path, and this connection's event. */
    private readonly pipe: Pipe,
    private readonly deps: TunnelDeps,
    /** The proxy, as dialed (with the program's rights, when they are not ours). */
    private readonly proxy: Pick<Peer, "hostname" | "port" | "withRights">,
    /** Called once when the tunnel is over (the plain path reports its own end through the pipe). */
    private readonly onFinish?: () => void,
  ) {}

  /** Read through a getter: a call that hands the connection on changes the state under TypeScript's narrowing. */
  private get isDone(): boolean {
    return this.state === "done";
  }

  attachClient(socket: Socket<LegData>): void {
    if (this.state === "done") {
      this.pipe.attach("client", socket);
      return;
    }
    this.client = socket;
    socket.data = { pipe: this, side: "client" };
    socket.setNoDelay(true);
    this.flush("client");
    this.openTap();
  }

  attachServer(socket: Socket<LegData>, noDelay: boolean): void {
    if (this.state === "done") {
      this.pipe.attach("server", socket, noDelay);
      return;
    }
    this.server = socket;
    this.serverNoDelay = noDelay;
    socket.data = { pipe: this, side: "server" };
    socket.setNoDelay(noDelay);
    this.flush("server");
    this.openTap();
  }

  fail(reason: string): void {
    if (this.state === "done") {
      this.pipe.fail(reason);
      return;
    }
    this.state = "done";
    this.client?.terminate();
    this.pipe.adoptTap(this.tap);
    this.pipe.fail(reason);
  }

  private openTap(): void {
    if (this.isOpened || !this.client || !this.server) return;
    this.isOpened = true;
    this.pipe.info.connectedAt ||= nowMicros();
    try {
      this.tap = this.deps.observer?.onOpen(this.pipe.info) ?? null;
    } catch {
      this.tap = null;
    }
  }

  onData(from: Side, chunk: Uint8Array): void {
    if (this.state === "done") return;
    if (from === "client") this.fromClient(chunk);
    else this.fromServer(chunk);
  }

  private fromClient(chunk: Uint8Array): void {
    if (this.state !== "request") {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes > MAX_HELD) this.goPlain();
      return;
    }
    if (this.request.len === 0) this.requestStartedAt = nowMicros();
    const from = this.request.add(chunk);
    const end = findHeadEnd(this.request.buf, this.request.len, from);
    if (end < 0) {
      if (this.request.len > MAX_HEAD) this.goPlain([chunk]);
      else this.forward("client", chunk);
      return;
    }
    const match = CONNECT_LINE.exec(this.request.text(end));
    const authority = match ? parseAuthority(match[1]!) : null;
    if (!authority) {
      // Another request (or not HTTP): the connection is the plain pipe's from here, this chunk included.
      this.goPlain([chunk]);
      return;
    }
    const inChunk = end - from;
    this.forward("client", chunk.subarray(0, inChunk));
    this.connectRequest = this.request.buf.slice(0, end);
    this.authority = authority;
    this.request.reset();
    this.state = "response";
    if (inChunk < chunk.length) this.fromClient(chunk.subarray(inChunk));
  }

  private fromServer(chunk: Uint8Array): void {
    if (this.state === "body") {
      const n = Math.min(this.bodyLeft, chunk.length);
      this.forward("server", chunk.subarray(0, n));
      this.bodyLeft -= n;
      if (this.bodyLeft === 0) this.nextRequest(chunk.subarray(n));
      return;
    }
    if (this.state !== "response") {
      // A server that speaks before it was asked: not a proxy this can follow.
      this.goPlain([], [chunk]);
      return;
    }
    const from = this.response.add(chunk);
    const end = findHeadEnd(this.response.buf, this.response.len, from);
    if (end < 0) {
      if (this.response.len > MAX_HEAD) this.goPlain([], [chunk]);
      else this.forward("server", chunk);
      return;
    }
    const head = this.response.text(end);
    const inChunk = end - from;
    const rest = chunk.subarray(inChunk);
    this.response.reset();
    this.forward("server", chunk.subarray(0, inChunk));
    const status = Number(STATUS_LINE.exec(head)?.[1] ?? 0);
    if (status >= 100 && status < 200 && status !== 101) {
      if (rest.length > 0) this.fromServer(rest);
      return;
    }
    if (status >= 200 && status < 300) {
      this.openTunnel(rest);
      return;
    }
    // A refusal: its body (by Content-Length) is relayed, then the client may ask again on this connection.
    const length = /\r\ncontent-length:[ \t]*(\d{1,15})[ \t]*\r\n/i.exec(head);
    if (status === 0 || !length || /\r\ntransfer-encoding:/i.test(head)) {
      this.goPlain([], rest.length > 0 ? [rest] : []);
      return;
    }
    this.bodyLeft = Number(length[1]);
    this.state = "body";
    if (this.bodyLeft === 0) this.nextRequest(rest);
    else if (rest.length > 0) this.fromServer(rest);
  }

  /** The refused CONNECT is over: what the client sent meanwhile is its next request. */
  private nextRequest(rest: Uint8Array): void {
    this.state = "request";
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (rest.length > 0) {
      this.goPlain(held, [rest]);
      return;
    }
    for (let i = 0; i < held.length; i++) {
      // fromClient may have handed the connection to the plain pipe: the rest goes there, in order.
      if (this.isDone) {
        for (const chunk of held.slice(i)) this.pipe.onData("client", chunk);
        return;
      }
      this.fromClient(held[i]!);
    }
  }

  /** Relays bytes of the CONNECT exchange (written now, or when the socket can take them) and shows them to the tap. */
  private forward(from: Side, chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const to: Side = from === "client" ? "server" : "client";
    this.pending[to].push(chunk);
    this.flush(to);
    if (!this.tap) return;
    try {
      this.tap.onData(from === "client", chunk, nowMicros());
    } catch {
      this.tap = null;
    }
  }

  private flush(side: Side): void {
    const socket = side === "client" ? this.client : this.server;
    const queue = this.pending[side];
    while (socket && queue.length > 0) {
      const bytes = queue[0]!;
      const written = socket.write(bytes);
      if (written < bytes.length) {
        queue[0] = bytes.subarray(Math.max(0, written));
        return;
      }
      queue.shift();
    }
  }

  onDrain(side: Side): void {
    this.flush(side);
  }

  onEnd(side: Side): void {
    if (this.state === "done") return;
    this.ends.push(side);
    this.goPlain();
  }

  onSocketClosed(side: Side, error?: unknown): void {
    if (this.state === "done") return;
    this.goPlain();
    this.pipe.onSocketClosed(side, error);
  }

  /**
   * The proxy said 2xx: what follows is a connection to the authority. It gets its own event source (sniffed, maybe
   * decrypted through the TLS relay over this same proxy connection), parented to the CONNECT.
   */
  private openTunnel(serverEarly: Uint8Array): void {
    const client = this.client;
    const server = this.server;
    const authority = this.authority;
    if (!client || !server || !authority || !this.connectRequest || this.pending.client.length + this.pending.server.length > 0) {
      this.goPlain([], serverEarly.length > 0 ? [serverEarly] : []);
      return;
    }
    this.state = "done";
    const at = nowMicros();
    let parentEventId = "";
    try {
      parentEventId = this.tap?.onTunnel?.(at) ?? "";
    } catch {}
    const outer = this.pipe.info;
    const info: ConnectionInfo = {
      id: this.deps.nextConnectionId(),
      direction: "outbound",
      clientAddr: outer.clientAddr,
      serverAddr: authority.text,
      pid: outer.pid,
      startedAt: this.requestStartedAt,
      connectedAt: at,
      tunnel: { proxyAddr: outer.serverAddr, parentEventId },
    };
    let isOver = false;
    const over = () => {
      if (isOver) return;
      isOver = true;
      const tap = this.tap;
      this.tap = null;
      try {
        tap?.onClose(nowMicros());
      } catch {}
      this.onFinish?.();
    };
    const via: ProxyRoute = { proxy: { hostname: this.proxy.hostname, port: this.proxy.port }, connectRequest: this.connectRequest };
    const peer: Peer = { hostname: authority.host, port: authority.port, via, withRights: this.proxy.withRights };
    const inner = new Pipe(info, this.deps.observer, over);
    const gate = new TlsGate(inner, this.deps.interception, this.deps.observer, peer, over);
    gate.attachServer(server, this.serverNoDelay);
    gate.attachClient(client);
    if (serverEarly.length > 0) gate.onData("server", serverEarly);
    for (const chunk of this.held) gate.onData("client", chunk);
    this.held = [];
  }

  /** Everything goes to the proxy connection's plain pipe, in order: bytes never relayed first, then the ends. */
  private goPlain(clientBytes: Uint8Array[] = [], serverBytes: Uint8Array[] = []): void {
    if (this.state === "done") return;
    this.state = "done";
    const pipe = this.pipe;
    pipe.adoptTap(this.tap);
    if (this.client) pipe.attach("client", this.client);
    if (this.server) pipe.attach("server", this.server, this.serverNoDelay);
    // Bytes already shown to the tap but not yet written go out untapped.
    for (const side of ["client", "server"] as const) {
      const from: Side = side === "client" ? "server" : "client";
      for (const bytes of this.pending[side].splice(0)) pipe.onData(from, bytes, true);
    }
    for (const chunk of [...this.held, ...clientBytes]) pipe.onData("client", chunk);
    this.held = [];
    for (const chunk of serverBytes) pipe.onData("server", chunk);
    for (const side of this.ends) pipe.onEnd(side);
  }
}

/**
 * A fresh tunnel through the proxy to the same authority (the TLS relay's passthrough: its own tunnel carried the
 * relay's handshake): the program's CONNECT is sent again and the proxy's answer consumed; a 2xx hands the socket to
 * `pipe` as its server side, anything else fails it.
 */
export function dialThrough(route: ProxyRoute, pipe: Pipe): void {
  const answer = new Gather();
  const dialing: LegOwner = {
    onData(_side, chunk) {
      const from = answer.add(chunk);
      const end = findHeadEnd(answer.buf, answer.len, from);
      if (end < 0) {
        if (answer.len > MAX_HEAD) pipe.fail("the proxy's answer is too long");
        return;
      }
      const status = Number(STATUS_LINE.exec(answer.text(end))?.[1] ?? 0);
      if (status < 200 || status >= 300) {
        pipe.fail(`the proxy answered ${status || "something else"} to the tunnel made again`);
        socket?.terminate();
        return;
      }
      const rest = answer.buf.slice(end, answer.len);
      if (socket) pipe.attach("server", socket);
      if (rest.length > 0) pipe.onData("server", rest);
    },
    onDrain() {},
    onEnd() {
      pipe.fail("the proxy closed");
    },
    onSocketClosed(_side, error) {
      pipe.fail(error ? String(error) : "the proxy closed");
    },
  };
  let socket: Socket<LegData> | null = null;
  Bun.connect<LegData>(
    legOptions(route.proxy, {
      open: (s: Socket<LegData>) => {
        socket = s;
        s.data = { pipe: dialing, side: "server" };
        s.write(route.connectRequest);
      },
      connectError: () => pipe.fail("connect failed"),
    }),
  ).catch(() => pipe.fail("connect failed"));
}
