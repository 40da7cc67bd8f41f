import { Duplex } from "node:stream";
import { createSecureContext, type SecureContext, TLSSocket } from "node:tls";
import type { Socket } from "bun";
import { type ClientHello, parseClientHello } from "../parse/sniff.ts";
import { dialThrough } from "./connect-tunnel.ts";
import { legOptions } from "./leg-options.ts";
import { type ConnectionInfo, type ConnectionObserver, type ConnectionTap, nowMicros } from "./observer.ts";
import { type LegData, type LegOwner, Pipe, type Side } from "./pipe.ts";
import { type Preamble, PreambleLeg } from "./start-tls.ts";

/**
 * The TLS leg of the relay. The program's ClientHello is read (not answered) first; the relay opens TLS to the
 * real peer with the same server name and ALPN list and verifies the peer's certificate against `ca`. Only then is
 * the program's TLS terminated, with a certificate for that name from `certFor` and the protocol the peer chose,
 * and plaintext flows both ways through the observer's tap. Whatever the relay cannot decrypt honestly (a peer
 * certificate that fails verification, a peer asking for a client certificate, a handshake that fails) is passed
 * through untouched on a fresh connection: the original ClientHello goes to the peer and the program sees what it
 * would see untraced.
 *
 * The program's side runs on node:tls (`TLSSocket` with `isServer` over a Duplex fed from the accepted socket),
 * since Bun's own TLS cannot take over a socket whose first bytes were already read; the peer's side is Bun's
 * native TLS client.
 */

export type TlsRelayConfig = {
  /** PEM roots the peer's certificate is verified against (what the program itself would trust). */
  ca: string[];
  /**
   * The certificate (PEM chain) and key presented to the program for a server name (or an IP address); `alsoNames`,
   * for a program that sent no server name, are the verified peer certificate's names.
   */
  certFor(serverName: string, alsoNames?: readonly string[]): { cert: string; key: string } | Promise<{ cert: string; key: string }>;
  /** Each handshake step (ClientHello, the peer's handshake, the program's handshake) gives up after this long. */
  handshakeTimeoutMs?: number;
};

export type PassthroughReason =
  | "no client hello"
  | "upstream certificate not trusted"
  | "mutual TLS"
  | "upstream handshake failed"
  | "upstream handshake timed out"
  | "channel binding";

/**
 * "client rejected the certificate": the program's TLS said so (an alert or a TLS error), so its host is passed through
 * from then on; "client closed during the handshake": it went away without saying why (a cancelled call, an exit),
 * which says nothing about the certificate.
 */
export type FailureReason = "client rejected the certificate" | "client closed during the handshake" | "client handshake timed out";

export type TlsOutcome =
  | { kind: "decrypted"; serverName: string; alpn: string; handshakeMicros: number }
  | { kind: "passthrough"; serverName: string; reason: PassthroughReason; detail: string }
  /** The program's handshake with us failed: the connection is lost; pass this host through from now on. */
  | { kind: "failed"; serverName: string; reason: FailureReason; detail: string };

/** A tunnel through a forward proxy: how to open another one to the same authority (the program's CONNECT, sent again). */
export type ProxyRoute = { proxy: { hostname: string; port: number }; connectRequest: Uint8Array };

/** The server the program asked for; `via` when it is reached through a proxy's tunnel. */
export type Peer = {
  hostname: string;
  port: number;
  via?: ProxyRoute;
  /** Runs a dial to the peer with the program's rights (its sockets are made with them); absent: ours are its own. */
  withRights?: <T>(dial: () => T) => T;
  /** The program asked for TLS in plaintext first (PostgreSQL's SSLRequest): a passed-through connection repeats it. */
  preamble?: Preamble;
  /**
   * Asked once the peer is verified, before the program is answered: null to decrypt, or why its TLS must pass
   * through (a PostgreSQL server offering channel binding, pg-probe.ts).
   */
  check?: (serverName: string) => Promise<string | null>;
};

const DEFAULT_TIMEOUT_MS = 10_000;
const HIGH_WATER = 1 << 20;
/**
 * In TLS 1.3 a peer that requires a client certificate says so only after the client's Finished, so the relay
 * waits before answering the program, the first time it meets a peer: three times the handshake's own duration, at
 * least 30 ms (on a loaded machine the alert came after one handshake's time, and the program's first call failed),
 * at most 250 ms. Once per peer per run.
 */
const MTLS_GRACE_MIN_MS = 30;
const MTLS_GRACE_MAX_MS = 250;
const MTLS_GRACE_HANDSHAKES = 3;
/** Server bytes held back from the tap until the client's first bytes were shown (the h2 server speaks first). */
const HELD_TAP_MAX_BYTES = 256 * 1024;

/** node:tls's native context for Bun's TLS options; a group list this BoringSSL refuses is left to its default. */
function nativeContext(ca: string[], curves: string): unknown {
  let context: SecureContext;
  try {
    context = createSecureContext({ ca, ...(curves ? { ecdhCurve: curves } : {}) });
  } catch {
    context = createSecureContext({ ca });
  }
  return (context as SecureContext & { context?: unknown }).context;
}

/** TLS supported_groups code points (IANA) by the names BoringSSL takes. */
const GROUP_NAMES = new Map<number, string>([
  [0x001d, "X25519"],
  [0x0017, "P-256"],
  [0x0018, "P-384"],
  [0x0019, "P-521"],
  [0x11ec, "X25519MLKEM768"],
]);

/** Upstream sessions kept for resumption (one per peer and server name, the newest). */
const MAX_SESSIONS = 1024;

/**
 * Long-lived, once per run: certificate contexts per server name, the peers known not to ask for client
 * certificates, one verifying context for every upstream handshake (building one from the CA list costs about
 * 200 µs a connection) and the peers' latest sessions, offered for resumption on the next connection to them.
 */
export class TlsRelayContext {
  readonly ca: string[];
  readonly handshakeTimeoutMs: number;
  private readonly contexts = new WeakMap<object, SecureContext>();
  private readonly provenPeers = new Set<string>();
  private readonly sessions = new Map<string, Uint8Array>();
  /** Upstream contexts by offered groups; null once this Bun refused one. */
  private upstream: Map<string, unknown> | null = new Map();

  constructor(private readonly config: TlsRelayConfig) {
    this.ca = config.ca;
    this.handshakeTimeoutMs = config.handshakeTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** One context per credentials object: the authority hands out the same one per name until it renews the leaf. */
  async secureContextFor(serverName: string, alsoNames?: readonly string[]): Promise<SecureContext> {
    const credentials = await this.config.certFor(serverName, alsoNames);
    let context = this.contexts.get(credentials);
    if (!context) {
      context = createSecureContext({ cert: credentials.cert, key: credentials.key });
      this.contexts.set(credentials, context);
    }
    return context;
  }

  /**
   * The options of an upstream TLS leg: a verifying context made once per offered group list from `ca` when this
   * Bun takes one (the native context node:tls holds); otherwise the CA list itself, verified the same way. The
   * peer is offered the key-exchange groups the program offered (those BoringSSL knows), so the relay's
   * handshake is as strong as the program's and no heavier (a post-quantum share the program did not send costs
   * the relay and the peer some 60 µs a handshake).
   */
  upstreamTls(groups: number[]): { secureContext: unknown } | { ca: string[]; ecdhCurve?: string } {
    const curves = groups
      .map((g) => GROUP_NAMES.get(g))
      .filter((n): n is string => n !== undefined)
      .join(":");
    if (this.upstream !== null) {
      let native = this.upstream.get(curves);
      if (native === undefined) {
        native = nativeContext(this.ca, curves);
        if (!native || typeof native !== "object") this.upstream = null;
        else if (this.upstream.size < 64) this.upstream.set(curves, native);
      }
      if (this.upstream && native) return { secureContext: native };
    }
    return { ca: this.ca, ...(curves ? { ecdhCurve: curves } : {}) };
  }

  /** This Bun refused the shared context: every later leg carries the CA list. */
  dropUpstreamContext(): void {
    this.upstream = null;
  }

  sessionFor(key: string): Uint8Array | undefined {
    return this.sessions.get(key);
  }

  keepSession(key: string, session: Uint8Array): void {
    this.sessions.delete(key);
    this.sessions.set(key, session);
    if (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
  }

  forgetSession(key: string): void {
    this.sessions.delete(key);
  }

  isProven(key: string): boolean {
    return this.provenPeers.has(key);
  }

  prove(key: string): void {
    this.provenPeers.add(key);
  }
}

type State = "hello" | "upstream" | "check" | "grace" | "client-handshake" | "open" | "passthrough" | "done";

/**
 * One program connection whose first bytes are TLS. The accepted socket's events arrive through `legHandlers`
 * (this object is its `pipe`); on passthrough it is handed to a plain `Pipe`.
 */
export class TlsRelay implements LegOwner {
  private state: State = "hello";
  private client: Socket<LegData> | null = null;
  private hello = new Uint8Array(0);
  private helloLen = 0;
  private parsed: ClientHello | null = null;
  private serverName = "";
  private isClientEnded = false;
  private up: Socket<TlsRelay> | null = null;
  private upOpenedAt = 0;
  private handshakeStartedAt = 0;
  private handshakeDoneAt = 0;
  private alpn = "";
  /** Plaintext from the peer before the program's TLS is up. */
  private upEarly: Uint8Array[] = [];
  private upQueue: Uint8Array[] = [];
  private upQueued = 0;
  private isUpEndPending = false;
  private wire: Duplex | null = null;
  /** Ciphertext for the program that its socket did not take yet, with the stream's callback. */
  private wirePending: { bytes: Uint8Array; done: (error?: Error | null) => void } | null = null;
  private term: TLSSocket | null = null;
  private tap: ConnectionTap | null = null;
  private heldTap: Array<{ chunk: Uint8Array; at: number }> | null = [];
  private heldTapBytes = 0;
  private timer: Timer | null = null;
  /** Bytes the program sent after its ClientHello while its handshake with us was going on. */
  private answeredBytes = 0;
  /** The program's connection to the peer, dialed when it called connect(): the TLS to the peer runs over it. */
  private dialed: Socket<LegData> | null = null;
  private context: Promise<SecureContext> | null = null;
  /** The upstream handshake is done and the session to resume with was not kept yet. */
  private isSessionPending = false;

  constructor(
    private readonly ctx: TlsRelayContext,
    readonly info: ConnectionInfo,
    private readonly observer: ConnectionObserver | null,
    private readonly peer: Peer,
    private readonly onOutcome?: (outcome: TlsOutcome) => void,
    /** Called once when the connection is over, whichever way it went (decrypted, passed through, failed). */
    private readonly onFinish?: () => void,
  ) {}

  /**
   * Takes over the program's accepted socket; `firstBytes` are bytes already read from it. `dialed`, when given, is a
   * plain TCP connection to the peer made for this program socket; the TLS to the peer is started on it instead of a
   * new connection.
   */
  attachClient(socket: Socket<LegData>, firstBytes?: Uint8Array, dialed?: Socket<LegData>): void {
    this.client = socket;
    this.dialed = dialed ?? null;
    socket.data = { pipe: this, side: "client" };
    socket.setNoDelay(true);
    this.arm("no client hello");
    if (firstBytes && firstBytes.length > 0) this.onData("client", firstBytes);
  }

  onData(_from: Side, chunk: Uint8Array): void {
    if (this.state === "client-handshake") this.answeredBytes += chunk.length;
    if (this.state === "open" || this.state === "client-handshake") {
      if (this.wire && !this.wire.push(chunk)) this.client?.pause();
      return;
    }
    if (this.state === "done" || this.state === "passthrough") return;
    this.keepHello(chunk);
    if (this.state !== "hello") return;
    const hello = parseClientHello(this.hello, this.helloLen);
    if (hello === "more") return;
    if (hello === null) {
      this.passThrough("no client hello", "the first bytes are not a TLS ClientHello");
      return;
    }
    this.parsed = hello;
    this.serverName = hello.serverName || this.peer.hostname;
    this.dialUpstream(hello);
  }

  onDrain(_side: Side): void {
    const pending = this.wirePending;
    if (!pending || !this.client) return;
    const written = this.client.write(pending.bytes);
    if (written < pending.bytes.length) {
      pending.bytes = pending.bytes.subarray(Math.max(0, written));
      return;
    }
    this.wirePending = null;
    pending.done();
  }

  onEnd(_side: Side): void {
    this.isClientEnded = true;
    if (this.wire) {
      this.wire.push(null);
      // node:tls reports nothing for an end during the handshake; once the bytes before it were read, it is a refusal.
      if (this.state === "client-handshake") {
        setTimeout(() => {
          if (this.state === "client-handshake") this.closedInHandshake();
        }, 10);
      }
    } else if (this.state === "hello") this.passThrough("no client hello", "the program closed before its ClientHello");
  }

  onSocketClosed(_side: Side, error?: unknown): void {
    if (this.state === "done" || this.state === "passthrough") return;
    this.client = null;
    if (this.state === "client-handshake") {
      this.closedInHandshake(error ? errorText(error) : undefined);
      return;
    }
    this.finish(error ? errorText(error) : undefined);
  }

  private keepHello(chunk: Uint8Array): void {
    if (this.helloLen + chunk.length > this.hello.length) {
      const grown = new Uint8Array(Math.max(this.hello.length * 2, this.helloLen + chunk.length, 2048));
      grown.set(this.hello.subarray(0, this.helloLen));
      this.hello = grown;
    }
    this.hello.set(chunk, this.helloLen);
    this.helloLen += chunk.length;
  }

  private arm(reason: PassthroughReason | "client handshake timed out"): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      const detail = `no progress in ${this.ctx.handshakeTimeoutMs} ms`;
      if (reason === "client handshake timed out") this.fail(reason, detail);
      else this.passThrough(reason, detail);
    }, this.ctx.handshakeTimeoutMs);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private peerKey(): string {
    return `${this.peer.hostname}:${this.peer.port}/${this.serverName}`;
  }

  private dialUpstream(hello: ClientHello): void {
    this.state = "upstream";
    this.arm("upstream handshake timed out");
    this.handshakeStartedAt = nowMicros();
    // Minted while the peer's handshake runs; awaited only when the program is answered. Without a server name the
    // program checks a name we cannot know: its leaf waits for the peer's certificate, whose names it copies.
    if (hello.serverName) {
      this.context = this.ctx.secureContextFor(this.serverName);
      this.context.catch(() => {});
    }
    const tlsFor = () => ({
      // Without SNI from the program, the peer's address is the name its certificate is checked against.
      serverName: this.serverName,
      ...this.ctx.upstreamTls(hello.groups),
      // Verified here, by the handshake handler, so that a failure can become a passthrough.
      rejectUnauthorized: false,
      ...(hello.alpnWire ? { ALPNProtocols: hello.alpnWire } : {}),
    });
    let tls = tlsFor();
    const dialed = this.dialed;
    this.dialed = null;
    if (dialed) {
      // The plain socket keeps its handlers and would see the ciphertext: detach it from the pipe first.
      dialed.data = undefined;
      try {
        let upgraded: [Socket<TlsRelay>, Socket<TlsRelay>];
        try {
          upgraded = dialed.upgradeTLS<TlsRelay>({ data: this, tls, socket: upHandlers });
        } catch (error) {
          if (!("secureContext" in tls)) throw error;
          this.ctx.dropUpstreamContext();
          tls = tlsFor();
          upgraded = dialed.upgradeTLS<TlsRelay>({ data: this, tls, socket: upHandlers });
        }
        const [raw, up] = upgraded;
        raw.data = undefined as unknown as TlsRelay;
        this.onUpOpen(up);
      } catch (error) {
        dialed.terminate();
        this.onUpError(error);
      }
      return;
    }
    this.dial(() =>
      Bun.connect<TlsRelay>({
        hostname: this.peer.hostname,
        port: this.peer.port,
        allowHalfOpen: true,
        data: this,
        tls,
        socket: upHandlers,
      }),
    ).catch((error: unknown) => this.onUpError(error));
  }

  private dial<T>(open: () => T): T {
    return this.peer.withRights ? this.peer.withRights(open) : open();
  }

  /** Upstream TCP is connected (the TLS handshake goes on): the peer's last session is offered before it starts. */
  onUpOpen(socket: Socket<TlsRelay>): void {
    if (this.up === socket) return;
    this.up = socket;
    this.upOpenedAt = nowMicros();
    socket.setNoDelay(true);
    const session = this.ctx.sessionFor(this.peerKey());
    if (session) socket.setSession(session);
  }

  /** The session to resume the next connection to this peer with (TLS 1.3 tickets come after the handshake). */
  private keepSession(socket: Socket<TlsRelay>): void {
    const session = (socket.getSession as () => Uint8Array | undefined)();
    if (session && session.length > 0) this.ctx.keepSession(this.peerKey(), session);
  }

  onUpHandshake(socket: Socket<TlsRelay>, success: boolean, error: Error | null): void {
    if (this.state !== "upstream") return;
    if (!success || error) {
      this.passThrough(classifyUpstreamFailure(socket, error), error ? errorText(error) : "handshake failed");
      return;
    }
    this.handshakeDoneAt = nowMicros();
    this.alpn = typeof socket.alpnProtocol === "string" ? socket.alpnProtocol : "";
    this.isSessionPending = true;
    const check = this.peer.check;
    if (check) {
      this.state = "check";
      check(this.serverName).then(
        (reason) => {
          if (this.state !== "check") return;
          if (reason) this.passThrough("channel binding", reason);
          else this.afterVerified(socket);
        },
        () => {
          if (this.state === "check") this.passThrough("channel binding", "the check failed");
        },
      );
      return;
    }
    this.afterVerified(socket);
  }

  /** The peer is verified (and checked): answer the program now, or after the grace a first TLS 1.3 peer gets. */
  private afterVerified(socket: Socket<TlsRelay>): void {
    if (socket.getTLSVersion() !== "TLSv1.3" || this.ctx.isProven(this.peerKey())) {
      this.answerClient();
      return;
    }
    this.state = "grace";
    const tookMs = (this.handshakeDoneAt - (this.upOpenedAt || this.handshakeStartedAt)) / 1000;
    const graceMs = Math.min(MTLS_GRACE_MAX_MS, Math.max(MTLS_GRACE_MIN_MS, MTLS_GRACE_HANDSHAKES * tookMs));
    setTimeout(() => {
      if (this.state === "grace") this.answerClient();
    }, graceMs);
  }

  onUpData(chunk: Uint8Array): void {
    if (this.isSessionPending && this.up) {
      this.isSessionPending = false;
      this.keepSession(this.up);
    }
    if (this.state === "open" || this.state === "client-handshake") {
      this.toClient(chunk);
      return;
    }
    if (this.state === "grace" || this.state === "upstream" || this.state === "check") this.upEarly.push(chunk);
  }

  onUpDrain(): void {
    const up = this.up;
    if (!up) return;
    while (this.upQueue.length > 0) {
      const bytes = this.upQueue[0]!;
      const written = up.write(bytes);
      if (written < bytes.length) {
        this.upQueue[0] = bytes.subarray(Math.max(0, written));
        this.upQueued -= Math.max(0, written);
        return;
      }
      this.upQueue.shift();
      this.upQueued -= bytes.length;
    }
    this.term?.resume();
    if (this.isUpEndPending) {
      this.isUpEndPending = false;
      up.shutdown();
    }
  }

  onUpEnd(): void {
    if (this.state === "open") {
      this.tapEnd(false);
      this.term?.end();
    } else if (this.state !== "done" && this.state !== "passthrough") {
      this.onUpError(new Error("the peer closed during the handshake"));
    }
  }

  onUpError(error: unknown): void {
    const text = errorText(error);
    if (this.state === "upstream" || this.state === "grace" || this.state === "check") {
      const isMutual = /CERTIFICATE_REQUIRED/.test(text) || (this.state === "grace" && CLIENT_CERT_ALERT.test(text));
      if (isMutual) this.passThrough("mutual TLS", text);
      else this.passThrough("upstream handshake failed", text);
      return;
    }
    if (this.state === "client-handshake") {
      // The peer went away while the program was still handshaking with us: tell the program the same way.
      this.client?.terminate();
      this.finish(text);
      return;
    }
    if (this.state === "open") {
      this.client?.terminate();
      this.term?.destroy();
      this.finish(text);
    }
  }

  onUpClose(error?: unknown): void {
    this.up = null;
    if (this.state === "done" || this.state === "passthrough") return;
    if (error || this.state !== "open") {
      this.onUpError(error ?? new Error("the peer closed during the handshake"));
      return;
    }
    // A clean close after FIN: the program's side follows once its TLS has said goodbye.
    this.term?.end();
  }

  /** The peer is verified: terminate the program's TLS with our certificate and the peer's protocol. */
  private answerClient(): void {
    this.state = "client-handshake";
    this.arm("client handshake timed out");
    const context = this.context ?? this.ctx.secureContextFor(this.serverName, this.up ? peerNames(this.up) : []);
    context.then(
      (secureContext) => {
        if (this.state === "client-handshake") this.terminateClientTls(secureContext);
      },
      (error: unknown) => {
        if (this.state === "client-handshake")
          this.passThrough("upstream handshake failed", `no certificate for ${this.serverName}: ${errorText(error)}`);
      },
    );
  }

  private terminateClientTls(context: SecureContext): void {
    const wire = new Duplex({
      read: () => this.client?.resume(),
      write: (chunk: Uint8Array, _encoding, done) => this.writeWire(chunk, done),
      final: (done) => {
        this.client?.shutdown();
        done();
      },
    });
    this.wire = wire;
    const term = new TLSSocket(wire, {
      isServer: true,
      secureContext: context,
      ...(this.alpn ? { ALPNProtocols: [this.alpn] } : {}),
    });
    this.term = term;
    term.on("secure", () => this.onClientSecure());
    term.on("data", (chunk: Uint8Array) => this.fromClient(chunk));
    term.on("end", () => this.onClientPlainEnd());
    term.on("error", (error: Error) => this.onTermError(error));
    term.on("close", () => {
      if (this.state === "client-handshake") this.closedInHandshake();
      else if (this.state === "open") this.finish();
    });
    wire.push(this.hello.subarray(0, this.helloLen));
    if (this.isClientEnded) wire.push(null);
  }

  private writeWire(chunk: Uint8Array, done: (error?: Error | null) => void): void {
    const client = this.client;
    if (!client) {
      done(new Error("the program's socket is closed"));
      return;
    }
    const written = client.write(chunk);
    if (written < chunk.length) this.wirePending = { bytes: chunk.subarray(Math.max(0, written)), done };
    else done();
  }

  private onClientSecure(): void {
    if (this.state !== "client-handshake") return;
    this.disarm();
    this.state = "open";
    this.ctx.prove(this.peerKey());
    const tls = {
      serverName: this.serverName,
      alpn: this.alpn,
      handshakeStartedAt: this.handshakeStartedAt,
      handshakeDoneAt: this.handshakeDoneAt,
    };
    this.info.tls = tls;
    this.info.connectedAt ||= this.upOpenedAt;
    this.onOutcome?.({
      kind: "decrypted",
      serverName: this.serverName,
      alpn: this.alpn,
      handshakeMicros: this.handshakeDoneAt - this.handshakeStartedAt,
    });
    if (this.observer) {
      try {
        this.tap = this.observer.onOpen(this.info);
      } catch {
        this.tap = null;
      }
    }
    for (const chunk of this.upEarly.splice(0)) this.toClient(chunk);
  }

  private onTermError(error: Error): void {
    if (this.state === "client-handshake") {
      this.fail("client rejected the certificate", errorText(error));
      return;
    }
    if (this.state === "open") {
      this.client?.terminate();
      this.up?.terminate();
      this.finish(errorText(error));
    }
  }

  /** Plaintext from the program: to the peer first, then to the tap. */
  private fromClient(chunk: Uint8Array): void {
    const up = this.up;
    if (!up) return;
    if (this.upQueue.length === 0) {
      const written = up.write(chunk);
      if (written < chunk.length) this.queueUp(chunk.subarray(Math.max(0, written)));
    } else {
      this.queueUp(chunk);
    }
    this.tapData(true, chunk);
  }

  private queueUp(bytes: Uint8Array): void {
    this.upQueue.push(bytes);
    this.upQueued += bytes.length;
    if (this.upQueued > HIGH_WATER) this.term?.pause();
  }

  private toClient(chunk: Uint8Array): void {
    const term = this.term;
    if (!term) return;
    if (!term.write(chunk)) {
      this.up?.pause();
      term.once("drain", () => this.up?.resume());
    }
    this.tapData(false, chunk);
  }

  private onClientPlainEnd(): void {
    if (this.state !== "open") return;
    this.tapEnd(true);
    if (!this.up) return;
    if (this.upQueue.length > 0) this.isUpEndPending = true;
    else this.up.shutdown();
  }

  private tapData(fromClient: boolean, chunk: Uint8Array): void {
    const tap = this.tap;
    if (!tap) return;
    const at = nowMicros();
    const held = this.heldTap;
    if (held) {
      // Show the program's first bytes first, as a sniffer expects (an h2 server sends SETTINGS unasked).
      if (!fromClient) {
        held.push({ chunk, at });
        this.heldTapBytes += chunk.length;
        if (this.heldTapBytes <= HELD_TAP_MAX_BYTES) return;
      }
      this.heldTap = null;
      if (fromClient) this.callTap(true, chunk, at);
      for (const item of held) this.callTap(false, item.chunk, item.at);
      return;
    }
    this.callTap(fromClient, chunk, at);
  }

  private callTap(fromClient: boolean, chunk: Uint8Array, at: number): void {
    try {
      this.tap?.onData(fromClient, chunk, at);
    } catch {
      this.detachTap();
    }
  }

  private tapEnd(fromClient: boolean): void {
    if (this.heldTap && this.heldTap.length > 0) {
      const held = this.heldTap;
      this.heldTap = null;
      for (const item of held) this.callTap(false, item.chunk, item.at);
    }
    try {
      this.tap?.onEnd?.(fromClient, nowMicros());
    } catch {
      this.detachTap();
    }
  }

  private detachTap(): void {
    const tap = this.tap;
    this.tap = null;
    try {
      tap?.onClose(nowMicros(), "tap detached: it failed");
    } catch {}
  }

  /** Hands the program's socket to a plain pipe to a fresh connection to the peer, replaying its bytes. */
  private passThrough(reason: PassthroughReason, detail: string): void {
    if (this.state === "done" || this.state === "passthrough") return;
    this.disarm();
    this.state = "passthrough";
    this.up?.terminate();
    this.up = null;
    if (this.serverName) this.ctx.forgetSession(this.peerKey());
    this.info.tlsReason = reason;
    this.info.tlsDetail = detail;
    this.onOutcome?.({ kind: "passthrough", serverName: this.serverName || this.parsed?.serverName || "", reason, detail });
    const client = this.client;
    if (!client) {
      this.onFinish?.();
      return;
    }
    const pipe = new Pipe(this.info, this.observer, this.onFinish);
    pipe.attach("client", client);
    if (this.helloLen > 0) pipe.onData("client", this.hello.slice(0, this.helloLen));
    if (this.isClientEnded) pipe.onEnd("client");
    if (this.peer.via) {
      const via = this.peer.via;
      this.dial(() => dialThrough(via, pipe));
      return;
    }
    this.dial(() =>
      Bun.connect<LegData>(
        legOptions(
          { hostname: this.peer.hostname, port: this.peer.port },
          {
            open: (socket: Socket<LegData>) => {
              const preamble = this.peer.preamble;
              if (preamble) new PreambleLeg(pipe, socket, preamble);
              else pipe.attach("server", socket);
            },
            connectError: () => pipe.fail("connect failed"),
          },
        ),
      ),
    ).catch(() => pipe.fail("connect failed"));
  }

  /**
   * The program closed before its handshake with us finished. Having answered our certificate with anything (an
   * alert: in TLS 1.3 it is encrypted, so its bytes are all there is to see) is a refusal; silence is a close.
   */
  private closedInHandshake(error?: string): void {
    const detail = error ?? "the program closed during the handshake";
    if (this.answeredBytes > 0) this.fail("client rejected the certificate", detail);
    else this.fail("client closed during the handshake", detail);
  }

  private fail(reason: FailureReason, detail: string): void {
    if (this.state === "done" || this.state === "passthrough") return;
    this.onOutcome?.({ kind: "failed", serverName: this.serverName, reason, detail });
    // The program saw its request fail: the connection is recorded, with its ClientHello and why.
    this.info.tlsReason = reason;
    this.info.tlsDetail = detail;
    if (this.observer && !this.tap) {
      try {
        this.tap = this.observer.onOpen(this.info);
        this.heldTap = null;
        this.tap?.onData(true, this.hello.subarray(0, this.helloLen), nowMicros());
      } catch {
        this.tap = null;
      }
    }
    this.finish(`${reason}: ${detail}`);
    this.term?.destroy();
  }

  private finish(error?: string): void {
    if (this.state === "done" || this.state === "passthrough") return;
    const wasOpen = this.state === "open";
    this.state = "done";
    this.onFinish?.();
    this.disarm();
    if (!wasOpen) {
      this.client?.terminate();
      this.up?.terminate();
    } else {
      this.client?.end();
      this.up?.end();
    }
    const tap = this.tap;
    this.tap = null;
    if (this.heldTap && this.heldTap.length > 0 && tap) {
      for (const item of this.heldTap) tap.onData(false, item.chunk, item.at);
    }
    this.heldTap = null;
    try {
      tap?.onClose(nowMicros(), error);
    } catch {}
  }
}

const upHandlers = {
  open(socket: Socket<TlsRelay>) {
    socket.data.onUpOpen(socket);
  },
  handshake(socket: Socket<TlsRelay>, success: boolean, error: Error | null) {
    socket.data.onUpHandshake(socket, success, error);
  },
  data(socket: Socket<TlsRelay>, chunk: Uint8Array) {
    socket.data.onUpData(chunk);
  },
  drain(socket: Socket<TlsRelay>) {
    socket.data.onUpDrain();
  },
  end(socket: Socket<TlsRelay>) {
    socket.data.onUpEnd();
  },
  close(socket: Socket<TlsRelay>, error?: Error) {
    socket.data.onUpClose(error);
  },
  error(socket: Socket<TlsRelay>, error: Error) {
    socket.data.onUpError(error);
  },
  connectError(socket: Socket<TlsRelay>, error: Error) {
    socket.data.onUpError(error);
  },
};

/** Verification errors carry OpenSSL's verify code (CERT_HAS_EXPIRED, UNABLE_TO_GET_ISSUER_CERT, ...) or Node's name check's. */
const VERIFY_CODE = /^(CERT_|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|ERR_TLS_CERT_ALTNAME|HOSTNAME_MISMATCH|INVALID_CA|PATH_LENGTH)/;
/** Alerts a server sends when it wanted a client certificate and got none. */
const CLIENT_CERT_ALERT = /CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE/;

function classifyUpstreamFailure(socket: Socket<TlsRelay>, error: Error | null): PassthroughReason {
  const code = error && "code" in error ? String(error.code) : "";
  if (VERIFY_CODE.test(code)) return "upstream certificate not trusted";
  const message = error?.message ?? "";
  if (/CERTIFICATE_REQUIRED/.test(message)) return "mutual TLS";
  // In TLS 1.2 the refusal ends the handshake; it follows the peer's certificate, unlike a failed negotiation.
  if (CLIENT_CERT_ALERT.test(message) && hasPeerCertificate(socket)) return "mutual TLS";
  return "upstream handshake failed";
}

/** The DNS names and IP addresses of the peer's (verified) certificate. */
function peerNames(socket: Socket<TlsRelay>): string[] {
  try {
    const san = (socket.getPeerCertificate() as { subjectaltname?: string } | undefined)?.subjectaltname ?? "";
    return san
      .split(", ")
      .map((entry) => /^(?:DNS|IP Address):(.+)$/.exec(entry)?.[1] ?? "")
      .filter(Boolean);
  } catch {
    return [];
  }
}

function hasPeerCertificate(socket: Socket<TlsRelay>): boolean {
  try {
    return Object.keys(socket.getPeerCertificate() ?? {}).length > 0;
  } catch {
    return false;
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = "code" in error ? String(error.code) : "";
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
