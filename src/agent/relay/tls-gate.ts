import type { Socket } from "bun";
import { parseClientHello } from "../parse/sniff.ts";
import type { TlsInterception } from "../tls/interception.ts";
import { ConnectTunnel } from "./connect-tunnel.ts";
import type { ConnectionObserver } from "./observer.ts";
import { pgChannelBindingCheck } from "./pg-probe.ts";
import type { LegData, LegOwner, Pipe, Side } from "./pipe.ts";
import { PG_TLS_ACCEPTED, pgPreamble, pgSslRequest } from "./start-tls.ts";
import type { Peer, TlsRelayContext } from "./tls-relay.ts";

/**
 * The first bytes of an outbound connection decide where it goes. The program's socket is held (read, nothing
 * forwarded) until its first bytes are known: a TLS ClientHello goes to the TLS relay (when interception is on), over
 * the connection already dialed for the program's connect(); a `CONNECT` to a forward proxy goes to the tunnel, whose
 * inner connection passes this gate again; anything else, a server that speaks first, or a host whose program refused
 * our certificate before, goes to the plain pipe with every byte replayed in order. Holding costs nothing a client
 * would notice: a client that speaks first waits for the server anyway. A PostgreSQL SSLRequest is forwarded and so is
 * the server's one-byte answer; after an `S` the gate waits for the ClientHello as at the start (start-tls.ts).
 */
/** How long a partial ClientHello (or "CONNECT ") is waited for before the bytes are let through as they are. */
const HELLO_WAIT_MS = 2000;
const CONNECT = new TextEncoder().encode("CONNECT ");

/** Whether the first bytes are, or may still become, "CONNECT ": 0 no, 1 not yet known, 2 yes. */
function connectPrefix(bytes: Uint8Array, length: number): 0 | 1 | 2 {
  const n = Math.min(length, CONNECT.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== CONNECT[i]) return 0;
  return length >= CONNECT.length ? 2 : 1;
}

/** What a proxy connection needs to become a tunnel; absent inside a tunnel (a CONNECT there is the server's business). */
export type TunnelOptions = { nextConnectionId: () => number };

export class TlsGate implements LegOwner {
  /** "pg-ssl": a PostgreSQL SSLRequest was forwarded; the server's answer is awaited. */
  private state: "sniff" | "pg-ssl" | "plain" | "tls" | "tunnel" | "done" = "sniff";
  /** Bytes the gate forwarded itself (the SSLRequest and its answer): the pipe shows them to its tap, never sends them again. */
  private forwarded: Array<{ side: Side; bytes: Uint8Array }> = [];
  private isPgTls = false;
  private tunnel: ConnectTunnel | null = null;
  private client: Socket<LegData> | null = null;
  private server: Socket<LegData> | null = null;
  private serverNoDelay = true;
  private held = new Uint8Array(0);
  private heldLen = 0;
  private serverEarly: Uint8Array[] = [];
  private ends: Side[] = [];
  private closes: Array<{ side: Side; error?: unknown }> = [];
  private hello: Uint8Array | null = null;
  private context: TlsRelayContext | undefined;
  private timer: Timer | null = null;

  constructor(
    private readonly pipe: Pipe,
    /** Null with `--tls off`: TLS goes to the plain pipe, not decrypted. */
    private readonly interception: TlsInterception | null,
    private readonly observer: ConnectionObserver | null,
    private readonly peer: Peer,
    /** Called once the connection is over when the TLS relay or a tunnel carried it (the pipe reports its own end). */
    private readonly onRelayFinish?: () => void,
    private readonly tunnels?: TunnelOptions,
  ) {}

  attachClient(socket: Socket<LegData>): void {
    if (this.state === "plain") {
      this.pipe.attach("client", socket);
      return;
    }
    if (this.tunnel) {
      this.tunnel.attachClient(socket);
      return;
    }
    this.client = socket;
    socket.data = { pipe: this, side: "client" };
    socket.setNoDelay(true);
  }

  /** The dial for the program's connect() succeeded. */
  attachServer(socket: Socket<LegData>, noDelay: boolean): void {
    if (this.state === "plain") {
      this.pipe.attach("server", socket, noDelay);
      return;
    }
    if (this.tunnel) {
      this.tunnel.attachServer(socket, noDelay);
      return;
    }
    this.server = socket;
    this.serverNoDelay = noDelay;
    socket.data = { pipe: this, side: "server" };
    if (this.state === "tls") this.startTls();
    else if (this.state === "pg-ssl") socket.write(pgPreamble.send);
  }

  /** The dial failed after the program was told EINPROGRESS: reset the program's side. */
  fail(reason: string): void {
    if (this.state === "plain") {
      this.pipe.fail(reason);
      return;
    }
    if (this.tunnel) {
      this.tunnel.fail(reason);
      return;
    }
    this.state = "done";
    this.client?.terminate();
    this.pipe.fail(reason);
  }

  onData(from: Side, chunk: Uint8Array): void {
    if (this.state === "pg-ssl") {
      this.pgAnswer(from, chunk);
      return;
    }
    if (this.state !== "sniff") return;
    if (from === "server") {
      // A server that speaks first: not a TLS client.
      this.serverEarly.push(chunk);
      this.goPlain();
      return;
    }
    this.keep(chunk);
    const connect = this.tunnels ? connectPrefix(this.held, this.heldLen) : 0;
    if (connect === 2) {
      this.goTunnel();
      return;
    }
    if (connect === 1) {
      this.timer ??= setTimeout(() => this.goPlain(), HELLO_WAIT_MS);
      return;
    }
    const pg = this.interception && !this.isPgTls ? pgSslRequest(this.held, this.heldLen) : 0;
    if (pg === 1) {
      this.timer ??= setTimeout(() => this.goPlain(), HELLO_WAIT_MS);
      return;
    }
    if (pg === 2) {
      this.askPgTls();
      return;
    }
    // Not a TLS record from its first bytes (0x16 0x03), or TLS not to be decrypted: plain at once.
    if (!this.interception || this.held[0] !== 0x16 || (this.heldLen > 1 && this.held[1] !== 0x03)) {
      this.goPlain();
      return;
    }
    const hello = parseClientHello(this.held, this.heldLen);
    if (hello === "more") {
      // Bytes that look like the start of a record but never complete one are not held for long.
      this.timer ??= setTimeout(() => this.goPlain(), HELLO_WAIT_MS);
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    if (hello === null) {
      this.goPlain();
      return;
    }
    const name = hello.serverName || this.peer.hostname;
    const interception = this.interception!;
    if (this.isPgTls) this.pipe.info.startTls = "postgresql";
    if (interception.isPassedThrough(name)) {
      interception.notePassedThrough(this.pipe.info, name);
      this.goPlain();
      return;
    }
    // Verified against what this process trusts; when that is unknown (a trust store it reads and we cannot), not at all.
    const trust = interception.trustFor(this.pipe.info.pid);
    if ("reason" in trust) {
      interception.notePassedThroughFor(this.pipe.info, name, trust.reason);
      this.goPlain();
      return;
    }
    this.context = trust.context;
    this.state = "tls";
    this.hello = this.held.slice(0, this.heldLen);
    if (this.server) this.startTls();
  }

  onDrain(_side: Side): void {}

  onEnd(side: Side): void {
    if (this.state !== "sniff" && this.state !== "pg-ssl") return;
    this.ends.push(side);
    this.goPlain();
  }

  onSocketClosed(side: Side, error?: unknown): void {
    if (this.state === "tls" && side === "client") {
      // The program went away before the peer's dial finished: nothing to relay.
      this.state = "done";
      this.server?.terminate();
      this.pipe.fail(error ? String(error) : "closed");
      return;
    }
    if (this.state !== "sniff" && this.state !== "pg-ssl") return;
    this.closes.push({ side, error });
    this.goPlain();
  }

  /** A PostgreSQL SSLRequest: forwarded now (or once the dial is up); the server's answer decides. */
  private askPgTls(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.state = "pg-ssl";
    const request = this.held.slice(0, pgPreamble.send.length);
    this.forwarded.push({ side: "client", bytes: request });
    this.held.copyWithin(0, request.length, this.heldLen);
    this.heldLen -= request.length;
    this.server?.write(request);
  }

  private pgAnswer(from: Side, chunk: Uint8Array): void {
    if (from === "client") {
      // A client waits for the answer; whatever it sends meanwhile is held.
      this.keep(chunk);
      return;
    }
    this.client?.write(chunk);
    this.forwarded.push({ side: "server", bytes: chunk });
    if (chunk[0] === PG_TLS_ACCEPTED && chunk.length === 1 && this.heldLen === 0) {
      // TLS follows: the ClientHello is read as any TLS client's first bytes.
      this.isPgTls = true;
      this.state = "sniff";
      return;
    }
    this.state = "sniff";
    this.goPlain();
  }

  private keep(chunk: Uint8Array): void {
    if (this.heldLen + chunk.length > this.held.length) {
      const grown = new Uint8Array(Math.max(this.held.length * 2, this.heldLen + chunk.length, 2048));
      grown.set(this.held.subarray(0, this.heldLen));
      this.held = grown;
    }
    this.held.set(chunk, this.heldLen);
    this.heldLen += chunk.length;
  }

  /** A CONNECT: the tunnel takes the sockets (whichever are here) and every byte held. */
  private goTunnel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.state = "tunnel";
    const tunnel = new ConnectTunnel(
      this.pipe,
      { interception: this.interception, observer: this.observer, nextConnectionId: this.tunnels!.nextConnectionId },
      { hostname: this.peer.hostname, port: this.peer.port, withRights: this.peer.withRights },
      this.onRelayFinish,
    );
    this.tunnel = tunnel;
    if (this.server) tunnel.attachServer(this.server, this.serverNoDelay);
    if (this.client) tunnel.attachClient(this.client);
    tunnel.onData("client", this.held.slice(0, this.heldLen));
    this.held = new Uint8Array(0);
  }

  private startTls(): void {
    const client = this.client;
    const server = this.server;
    if (!client || !server || !this.hello || !this.interception) return;
    this.state = "done";
    const peer: Peer = this.isPgTls
      ? {
          ...this.peer,
          preamble: pgPreamble,
          check: (serverName) =>
            pgChannelBindingCheck({ hostname: this.peer.hostname, port: this.peer.port, serverName, withRights: this.peer.withRights }),
        }
      : this.peer;
    const relay = this.interception.relayFor(this.pipe.info, this.observer, peer, this.context, this.onRelayFinish);
    relay.attachClient(client, this.hello, server);
  }

  /** Everything goes to the plain pipe, in the order it came. */
  private goPlain(): void {
    if (this.state !== "sniff") return;
    this.state = "plain";
    if (this.timer) clearTimeout(this.timer);
    const pipe = this.pipe;
    if (this.client) pipe.attach("client", this.client);
    if (this.server) pipe.attach("server", this.server, this.serverNoDelay);
    for (const { side, bytes } of this.forwarded) pipe.observe(side, bytes);
    this.forwarded = [];
    for (const chunk of this.serverEarly) pipe.onData("server", chunk);
    if (this.heldLen > 0) pipe.onData("client", this.held.slice(0, this.heldLen));
    this.held = new Uint8Array(0);
    for (const side of this.ends) pipe.onEnd(side);
    for (const { side, error } of this.closes) pipe.onSocketClosed(side, error);
  }
}
