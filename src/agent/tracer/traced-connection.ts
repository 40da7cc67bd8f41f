import { errorMessage } from "~/lib/errors.ts";
import type { ConnectionSummary, ProcessInfo } from "../event.ts";
import type { Exchange } from "../parse/exchange.ts";
import { Http1Session, type Http1SessionHooks } from "../parse/http1-session.ts";
import { Http2Session } from "../parse/http2-session.ts";
import { isHttp2PrefaceStart, MAX_SNIFF_BYTES, mayBeHttp2ServerPreface, sniff, tlsServerName } from "../parse/sniff.ts";
import type { ConnectionInfo, ConnectionTap } from "../relay/observer.ts";
import type { ParentTracker } from "./parent-tracker.ts";
import type { TracerStats } from "./stats.ts";

/** What a connection hands on to become an event: an HTTP exchange, or the summary of a connection that was not HTTP. */
export type FinishedWork =
  | { kind: "http"; ex: Exchange; conn: ConnectionInfo; proc: ProcessInfo }
  | { kind: "tcp"; sum: ConnectionSummary; conn: ConnectionInfo; proc: ProcessInfo };

export type TracedConnectionDeps = {
  /** Body bytes kept per message and direction. */
  payloadLimit: number;
  /** Record inbound connections on which nothing was sent (health checks). */
  recordEmptyConnections: boolean;
  /** The tracer's counters: this connection adds its bytes, parser failures and tap errors. */
  stats: TracerStats;
  parents: Pick<ParentTracker<Exchange>, "current" | "start" | "finish">;
  /** How long after the client's FIN its unanswered requests count as given up on (CLIENT_GONE_MS unless given). */
  clientGoneMs?: number;
  /** Takes finished work off the data path; must not throw. */
  enqueue(work: FinishedWork): void;
  newEventId(): string;
  /** A process's facts (cached per process). */
  processInfo(pid: number): ProcessInfo;
};

/** "http" covers HTTP/1.x and HTTP/2 (prior knowledge or h2c upgrade): a session parses the connection. */
type Mode = "sniff" | "http" | "tls-hello" | "opaque";

/** A server's SETTINGS (and a WINDOW_UPDATE after it) sent before the client spoke. */
const MAX_SERVER_EARLY = 4096;

/**
 * How long after the client's FIN a request without a response head counts as given up on: a client that only
 * half-closed (nc, a shell's pipe) is answered within it; one that gave up is recorded then, not when the program closes.
 */
const CLIENT_GONE_MS = 1000;

/** A ClientHello is one record of at most 16 KiB. */
const MAX_HELLO_RECORD = 5 + 16 * 1024;

/**
 * One relayed connection as the tracer sees it: sniffs the first bytes, then parses HTTP/1.x or HTTP/2 into
 * exchanges, or records a TLS server name, or gives up to passthrough. Any error inside makes the connection
 * opaque; the relay's bytes are never touched.
 */
export class TracedConnection implements ConnectionTap {
  private mode: Mode = "sniff";
  private session: Http1Session | Http2Session | null = null;
  private hooks: Http1SessionHooks | null = null;
  private sniffBuf: Uint8Array | null = null;
  private sniffLen = 0;
  private sniffAt = 0;
  /** What a server sent before the client said anything, when it may be an HTTP/2 server preface. */
  private serverEarly: { bytes: Uint8Array; length: number; at: number } | null = null;
  private bytesFromClient = 0;
  private bytesFromServer = 0;
  private readonly tags: Record<string, string> = {};
  private tlsName = "";
  private hello: Uint8Array | null = null;
  private helloLen = 0;
  private httpVersion = "";
  private isClosed = false;
  private readonly parentEventId: string;
  /** Set between the client's FIN and the moment its unanswered requests count as given up on. */
  private giveUpTimer: ReturnType<typeof setTimeout> | null = null;
  /** Inbound requests started and not yet answered (registered with the parent tracker under conn.pid). */
  private readonly inflight = new Set<Exchange>();

  constructor(
    private readonly conn: ConnectionInfo,
    private proc: ProcessInfo,
    private readonly deps: TracedConnectionDeps,
  ) {
    this.parentEventId = conn.tunnel ? conn.tunnel.parentEventId : conn.direction === "outbound" ? deps.parents.current(conn.pid) : "";
  }

  /** The relay split the tunnel of this connection's CONNECT off: its id is the tunnel's connection's parent. */
  onTunnel(_at: number): string {
    const session = this.session;
    return session instanceof Http1Session && session.tunnel ? session.tunnel.eventId : "";
  }

  onProcess(pid: number): void {
    const previous = this.conn.pid;
    this.conn.pid = pid;
    this.proc = this.deps.processInfo(pid);
    // Requests in flight were started under the listener's process: the calls they make come from this one.
    for (const ex of this.inflight) {
      this.deps.parents.finish(previous, ex);
      this.deps.parents.start(pid, ex);
    }
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (fromClient) this.bytesFromClient += chunk.length;
    else this.bytesFromServer += chunk.length;
    if (this.mode === "opaque") return;
    try {
      if (this.mode === "http") {
        this.session!.onData(fromClient, chunk, at);
        this.checkSession(at);
        return;
      }
      if (this.mode === "tls-hello") this.helloData(fromClient, chunk);
      else this.sniffData(fromClient, chunk, at);
    } catch (error) {
      this.giveUp(`tap error: ${errorMessage(error)}`, true);
    }
  }

  onEnd(fromClient: boolean, at: number): void {
    if (this.mode !== "http") return;
    try {
      const session = this.session!;
      session.onEnd(fromClient, at);
      this.checkSession();
      if (fromClient && !this.giveUpTimer && this.mode === "http" && session.hasUnanswered()) {
        this.giveUpTimer = setTimeout(() => this.giveUpUnanswered(), this.deps.clientGoneMs ?? CLIENT_GONE_MS);
        this.giveUpTimer.unref?.();
      }
    } catch (error) {
      this.giveUp(`tap error: ${errorMessage(error)}`, true);
    }
  }

  /** The client sent its FIN and no answer began since: what it was waiting for was given up on at that FIN. */
  private giveUpUnanswered(): void {
    this.giveUpTimer = null;
    if (this.isClosed || this.mode !== "http") return;
    try {
      this.session!.giveUpUnanswered();
      this.checkSession();
    } catch (error) {
      this.giveUp(`tap error: ${errorMessage(error)}`, true);
    }
  }

  onClose(at: number, error?: string): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (this.giveUpTimer) clearTimeout(this.giveUpTimer);
    this.giveUpTimer = null;
    const stats = this.deps.stats;
    stats.openConnections--;
    stats.bytesFromClients += this.bytesFromClient;
    stats.bytesFromServers += this.bytesFromServer;
    if (this.mode === "sniff" && this.sniffLen === 0 && this.serverEarly) this.decideUnknown("server spoke first");
    else if (this.mode === "sniff" && this.sniffLen > 0) this.decideUnknown("closed before the protocol was known");
    if (this.mode === "tls-hello") this.finishHello();
    if (this.session) {
      try {
        this.session.onClose(at, error);
        this.checkSession();
      } catch {
        stats.tapErrors++;
      }
      // A connection that was HTTP all along (or upgraded) is fully described by its exchanges.
      if (this.mode === "http" || this.session.state === "opaque") return;
    }
    const isEmpty = this.bytesFromClient === 0 && this.bytesFromServer === 0;
    if (isEmpty && this.conn.direction === "inbound" && !this.deps.recordEmptyConnections) return;
    if (error) this.tags.error = error;
    this.deps.enqueue({
      kind: "tcp",
      conn: this.conn,
      proc: this.proc,
      sum: {
        openedAt: this.conn.startedAt,
        closedAt: at,
        bytesFromClient: this.bytesFromClient,
        bytesFromServer: this.bytesFromServer,
        tags: this.tags,
        tlsServerName: this.tlsName,
        httpVersion: this.httpVersion,
        eventId: this.deps.newEventId(),
        parentEventId: this.parentEventId,
      },
    });
  }

  private sniffData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (!fromClient) {
      if (this.holdServerPreface(chunk, at)) return;
      // The server spoke first (databases, SMTP) or answered a partial line: not HTTP from a client.
      this.tags.reason = this.sniffLen === 0 ? "server spoke first" : "not http";
      this.mode = "opaque";
      this.sniffBuf = null;
      this.serverEarly = null;
      return;
    }
    let buf = chunk;
    let len = chunk.length;
    const held = this.sniffLen;
    if (held > 0) {
      this.appendSniff(chunk);
      buf = this.sniffBuf!;
      len = this.sniffLen;
    } else {
      this.sniffAt = at;
    }
    const kind = sniff(buf, len);
    if (this.serverEarly && kind !== "http2" && !(kind === "more" && isHttp2PrefaceStart(buf, len))) {
      this.decideUnknown("server spoke first");
      return;
    }
    if (kind === "more") {
      if (this.sniffLen === 0) this.appendSniff(chunk);
      if (this.sniffLen >= MAX_SNIFF_BYTES) this.decideUnknown("request line too long");
      return;
    }
    if (kind === "http1" || kind === "http2") {
      this.startHttp(kind);
      const session = this.session!;
      const sniffed = this.sniffBuf;
      const early = this.serverEarly;
      this.sniffBuf = null;
      this.sniffLen = 0;
      this.serverEarly = null;
      // The server's SETTINGS came first: so it goes first.
      if (early) session.onData(false, early.bytes.subarray(0, early.length), early.at);
      if (held > 0 && sniffed) session.onData(true, sniffed.subarray(0, held), this.sniffAt);
      session.onData(true, chunk, at);
      this.checkSession();
      return;
    }
    if (kind === "tls") {
      this.markNotDecrypted();
      const recordEnd = 5 + ((buf[3]! << 8) | buf[4]!);
      if (len < recordEnd && recordEnd <= MAX_HELLO_RECORD) {
        // The ClientHello continues in the next reads: gather it for the server name.
        this.hello = new Uint8Array(recordEnd);
        this.hello.set(buf.subarray(0, len));
        this.helloLen = len;
        this.mode = "tls-hello";
        this.sniffBuf = null;
        this.sniffLen = 0;
        return;
      }
      this.tlsName = tlsServerName(buf, len);
    }
    this.mode = "opaque";
    this.sniffBuf = null;
    this.sniffLen = 0;
  }

  /** TLS the relay did not decrypt (else the tap would see plaintext): say why. */
  private markNotDecrypted(): void {
    const conn = this.conn;
    this.tags.tls = "not decrypted";
    this.tags.tls_reason =
      conn.tlsReason ?? (conn.direction === "inbound" ? "inbound TLS (the program terminates it)" : "interception off");
    if (conn.tlsDetail) this.tags.tls_detail = conn.tlsDetail.slice(0, 500);
  }

  private helloData(fromClient: boolean, chunk: Uint8Array): void {
    const hello = this.hello!;
    if (fromClient) {
      const n = Math.min(chunk.length, hello.length - this.helloLen);
      hello.set(chunk.subarray(0, n), this.helloLen);
      this.helloLen += n;
      if (this.helloLen < hello.length) return;
    }
    this.finishHello();
  }

  private finishHello(): void {
    if (this.hello) this.tlsName = tlsServerName(this.hello, this.helloLen);
    this.hello = null;
    this.mode = "opaque";
  }

  private appendSniff(chunk: Uint8Array): void {
    const room = MAX_SNIFF_BYTES - this.sniffLen;
    const n = Math.min(room, chunk.length);
    if (!this.sniffBuf) this.sniffBuf = new Uint8Array(MAX_SNIFF_BYTES);
    this.sniffBuf.set(chunk.subarray(0, n), this.sniffLen);
    this.sniffLen += n;
  }

  private decideUnknown(reason: string): void {
    this.tags.reason = reason;
    this.mode = "opaque";
    this.sniffBuf = null;
    this.sniffLen = 0;
    this.serverEarly = null;
  }

  /**
   * An h2c server may send its SETTINGS before the client's preface arrives: bytes that may be one are held (a few
   * KiB at most) while what the client sent so far may still be the preface. True when held.
   */
  private holdServerPreface(chunk: Uint8Array, at: number): boolean {
    if (!isHttp2PrefaceStart(this.sniffBuf, this.sniffLen)) return false;
    const early = this.serverEarly ?? { bytes: new Uint8Array(MAX_SERVER_EARLY), length: 0, at };
    if (early.length + chunk.length > MAX_SERVER_EARLY) return false;
    early.bytes.set(chunk, early.length);
    early.length += chunk.length;
    if (!mayBeHttp2ServerPreface(early.bytes, early.length)) return false;
    this.serverEarly = early;
    return true;
  }

  private startHttp(kind: "http1" | "http2"): void {
    const conn = this.conn;
    const isOutbound = conn.direction === "outbound";
    const { parents, payloadLimit } = this.deps;
    this.mode = "http";
    if (kind === "http2") this.httpVersion = "2";
    const hooks: Http1SessionHooks = {
      newEventId: this.deps.newEventId,
      // Inside a proxy's tunnel the CONNECT is the parent; otherwise the request this process is serving.
      parentEventId: this.conn.tunnel ? () => this.parentEventId : () => parents.current(conn.pid),
      onRequestStart: (ex) => {
        if (isOutbound) return;
        parents.start(conn.pid, ex);
        this.inflight.add(ex);
      },
      onExchange: (ex) => {
        if (!isOutbound) {
          parents.finish(conn.pid, ex);
          this.inflight.delete(ex);
        }
        this.deps.enqueue({ kind: "http", ex, conn, proc: this.proc });
      },
    };
    const options = { payloadLimit, isOutbound };
    this.hooks = hooks;
    this.session = kind === "http2" ? new Http2Session(hooks, options) : new Http1Session(hooks, options);
  }

  /** An HTTP/1 connection upgraded to h2c: HTTP/2 from here, starting with what each side already sent. */
  private switchToHttp2(from: Http1Session, at: number): void {
    const upgraded = from.upgraded!;
    const next = new Http2Session(this.hooks!, { payloadLimit: this.deps.payloadLimit, isOutbound: this.conn.direction === "outbound" });
    next.adoptUpgradedRequest(upgraded.exchange);
    this.session = next;
    this.httpVersion = "2";
    if (upgraded.clientBytes.length > 0) next.onData(true, upgraded.clientBytes, at);
    if (upgraded.serverBytes.length > 0) next.onData(false, upgraded.serverBytes, at);
  }

  private checkSession(at = 0): void {
    let s = this.session!;
    if (s.state === "opaque" && s instanceof Http1Session && s.upgraded && this.mode === "http") {
      this.switchToHttp2(s, at);
      s = this.session!;
    }
    if (s.state === "http" || this.mode !== "http") return;
    if (s.state === "failed") this.giveUp(s.failReason, false);
    else this.mode = "opaque";
  }

  private giveUp(reason: string, isTapError: boolean): void {
    if (isTapError) this.deps.stats.tapErrors++;
    else this.deps.stats.parserGaveUp++;
    this.tags.passthrough = reason.slice(0, 200);
    this.mode = "opaque";
    this.sniffBuf = null;
    if (this.session && this.session.state === "http") {
      this.session.state = "failed";
      this.session.failReason = reason;
    }
  }
}
