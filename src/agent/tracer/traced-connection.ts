import { errorMessage } from "~/lib/errors.ts";
import type { RateLimit, TokenBucket } from "~/lib/rate-limit.ts";
import type { ConnectionSummary, ProcessInfo } from "../event.ts";
import type { DbCall, DbSession, DbSessionHooks } from "../parse/db-call.ts";
import { isMysqlGreeting, sniffDbClient } from "../parse/db-sniff.ts";
import type { Exchange } from "../parse/exchange.ts";
import { Http1Session, type Http1SessionHooks } from "../parse/http1-session.ts";
import { Http2Session } from "../parse/http2-session.ts";
import { MysqlSession } from "../parse/mysql.ts";
import { PostgresSession } from "../parse/postgres.ts";
import { RedisSession } from "../parse/redis.ts";
import { isHttp2PrefaceStart, MAX_SNIFF_BYTES, mayBeHttp2ServerPreface, sniff, tlsServerName } from "../parse/sniff.ts";
import { WebSocketSession } from "../parse/websocket.ts";
import { negotiatedExtensions } from "../parse/websocket-deflate.ts";
import type { ConnectionInfo, ConnectionTap } from "../relay/observer.ts";
import type { WsWork } from "../ws-event.ts";
import type { ParentTracker } from "./parent-tracker.ts";
import type { TracerStats } from "./stats.ts";

/**
 * What a connection hands on to become an event: an HTTP exchange, a database call, a WebSocket message, or the
 * summary of a connection that was none of those.
 */
export type FinishedWork =
  | { kind: "http"; ex: Exchange; conn: ConnectionInfo; proc: ProcessInfo }
  | { kind: "db"; call: DbCall; conn: ConnectionInfo; proc: ProcessInfo }
  | { kind: "ws"; ws: WsWork; conn: ConnectionInfo; proc: ProcessInfo }
  | { kind: "tcp"; sum: ConnectionSummary; conn: ConnectionInfo; proc: ProcessInfo };

export type TracedConnectionDeps = {
  /** Body bytes kept per message and direction (and per WebSocket message). */
  payloadLimit: number;
  /** WebSocket messages recorded per second per connection, and at once; the rest are counted. */
  webSocketBudget: RateLimit;
  /** The tracer's time for decompressing (bodies and WebSocket messages), in milliseconds. */
  decodeBudget: TokenBucket;
  /** Record inbound connections on which nothing was sent (health checks). */
  recordEmptyConnections: boolean;
  /** The tracer's counters: this connection adds its bytes, parser failures and tap errors. */
  stats: TracerStats;
  parents: Pick<ParentTracker<Exchange>, "current" | "parent" | "start" | "finish">;
  /** Shows the tracer the inbound connections of `pid` still held back (see ConnectionObserver.setInboundRelease). */
  releaseInbound?(pid: number): void;
  /** How long after the client's FIN its unanswered requests count as given up on (CLIENT_GONE_MS unless given). */
  clientGoneMs?: number;
  /** Takes finished work off the data path; must not throw. */
  enqueue(work: FinishedWork): void;
  /** The connection closed (the tracer stops sweeping it for requests in flight). */
  closed?(connection: TracedConnection): void;
  newEventId(): string;
  /** A process's facts (cached per process). */
  processInfo(pid: number): ProcessInfo;
};

/**
 * "http": a session parses the connection: HTTP/1.x, HTTP/2 (prior knowledge or h2c upgrade), or the WebSocket an
 * HTTP/1.1 upgrade made of it; "db" a database protocol's session (a program's calls to its databases, or, traced on
 * the server's side, the calls it received).
 */
type Mode = "sniff" | "http" | "db" | "tls-hello" | "opaque";

/** A MySQL greeting is far shorter; a server's first bytes are held this far while they may still be one. */
const MAX_GREETING = 4096;

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
  private session: Http1Session | Http2Session | WebSocketSession | null = null;
  private db: DbSession | null = null;
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
  private hasWebSocketFailed = false;
  private readonly parentEventId: string;
  /** Set between the client's FIN and the moment its unanswered requests count as given up on. */
  private giveUpTimer: ReturnType<typeof setTimeout> | null = null;
  /** Inbound requests started and not yet answered (registered with the parent tracker under conn.pid). */
  private readonly inflight = new Set<Exchange>();
  /** Requests of this connection shown as pending so far. */
  private pendingShown = 0;

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
      if (this.mode === "db") {
        this.db!.onData(fromClient, chunk, at);
        if (this.db!.state !== "db") this.checkDb();
        return;
      }
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
      // A WebSocket has no request waiting for an answer: its messages end with it.
      if (fromClient && !this.giveUpTimer && this.mode === "http" && !(session instanceof WebSocketSession) && session.hasUnanswered()) {
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
    const session = this.session;
    if (this.isClosed || this.mode !== "http" || !session || session instanceof WebSocketSession) return;
    try {
      session.giveUpUnanswered();
      this.checkSession();
    } catch (error) {
      this.giveUp(`tap error: ${errorMessage(error)}`, true);
    }
  }

  /**
   * The requests started before `before` (µs) that still wait for a response head and were not shown yet, at most
   * `maxShown` over the connection's life: each is passed to `show` with what it needs to become a pending notice
   * (false: the run's bound is spent, stop).
   */
  duePending(
    before: number,
    maxShown: number,
    shown: WeakSet<Exchange>,
    show: (ex: Exchange, conn: ConnectionInfo, proc: ProcessInfo) => boolean,
  ): void {
    const session = this.session;
    if (this.isClosed || this.mode !== "http" || !session || session instanceof WebSocketSession) return;
    for (const ex of session.unanswered()) {
      if (this.pendingShown >= maxShown) return;
      if (ex.requestStartAt > before || shown.has(ex)) continue;
      if (!show(ex, this.conn, this.proc)) return;
      shown.add(ex);
      this.pendingShown++;
    }
  }

  onClose(at: number, error?: string): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.deps.closed?.(this);
    if (this.giveUpTimer) clearTimeout(this.giveUpTimer);
    this.giveUpTimer = null;
    const stats = this.deps.stats;
    stats.openConnections--;
    stats.bytesFromClients += this.bytesFromClient;
    stats.bytesFromServers += this.bytesFromServer;
    if (this.mode === "sniff" && this.sniffLen === 0 && this.serverEarly) this.decideUnknown("server spoke first");
    else if (this.mode === "sniff" && this.sniffLen > 0) this.decideUnknown("closed before the protocol was known");
    if (this.mode === "tls-hello") this.finishHello();
    if (this.db) {
      const db = this.db;
      if (db.state === "db") {
        try {
          db.onClose(at, error);
        } catch {
          stats.tapErrors++;
        }
      }
      stats.dbUnrecorded += db.unrecorded;
      // A database connection is described by its calls; one on which none was recorded is a tcp event, saying why.
      if (db.state === "db" && db.calls > 0) return;
      this.tags.db = db.system;
      if (db.calls > 0) this.tags.db_calls = String(db.calls);
    }
    if (this.session) {
      try {
        this.session.onClose(at, error);
        this.checkSession();
      } catch {
        stats.tapErrors++;
      }
      // A connection that was HTTP all along (or upgraded) is fully described by its exchanges (and messages).
      if (this.mode === "http" || this.session.state === "opaque" || this.session instanceof WebSocketSession) return;
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
      if (this.sniffLen === 0 && this.greetingData(chunk, at)) return;
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
    if (kind === "unknown" && !this.serverEarly) {
      const db = sniffDbClient(buf, len);
      if (db === "postgresql" || db === "redis") {
        const sniffed = this.sniffBuf;
        this.sniffBuf = null;
        this.sniffLen = 0;
        this.startDb(db);
        if (held > 0 && sniffed) this.db!.onData(true, sniffed.subarray(0, held), this.sniffAt);
        this.db!.onData(true, chunk, at);
        this.checkDb();
        return;
      }
      if (db === "more") {
        if (this.sniffLen === 0) this.appendSniff(chunk);
        return;
      }
    }
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
    if (conn.startTls) this.tags.db = conn.startTls;
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

  /** A server's first bytes on an outbound connection that are (or may still be) a MySQL greeting: true when taken. */
  private greetingData(chunk: Uint8Array, at: number): boolean {
    const early = this.serverEarly;
    let buf = chunk;
    let len = chunk.length;
    if (early) {
      if (early.length + chunk.length > MAX_GREETING) return false;
      early.bytes.set(chunk, early.length);
      early.length += chunk.length;
      buf = early.bytes;
      len = early.length;
    }
    const verdict = isMysqlGreeting(buf, len);
    if (verdict === false) {
      if (early) {
        // Not a greeting after all: what was held is what the server spoke first.
        early.length -= chunk.length;
        return false;
      }
      return false;
    }
    if (verdict === "more") {
      if (!early) {
        if (chunk.length > MAX_GREETING) return false;
        const bytes = new Uint8Array(MAX_GREETING);
        bytes.set(chunk);
        this.serverEarly = { bytes, length: chunk.length, at };
      }
      return true;
    }
    this.serverEarly = null;
    this.startDb("mysql");
    this.db!.onData(false, early ? buf.subarray(0, len) : chunk, early ? early.at : at);
    this.checkDb();
    return true;
  }

  private startDb(system: "postgresql" | "mysql" | "redis"): void {
    const conn = this.conn;
    const { parents, payloadLimit } = this.deps;
    this.mode = "db";
    this.deps.stats.dbConnections++;
    const hooks: DbSessionHooks = {
      newEventId: this.deps.newEventId,
      // A call the program made: the request it was serving; one it received (a traced database server) has none.
      parent: conn.tunnel
        ? () => ({ id: this.parentEventId, candidates: 1 })
        : conn.direction === "outbound"
          ? () => {
              // A pooled connection: the request that led to this call may still be held back, unseen.
              this.deps.releaseInbound?.(conn.pid);
              return parents.parent(conn.pid);
            }
          : () => ({ id: "", candidates: 0 }),
      onCall: (call) => this.deps.enqueue({ kind: "db", call, conn, proc: this.proc }),
    };
    const options = { payloadLimit };
    this.db =
      system === "postgresql"
        ? new PostgresSession(hooks, options)
        : system === "mysql"
          ? new MysqlSession(hooks, options)
          : new RedisSession(hooks, options);
  }

  /** The database session stopped parsing: encryption it cannot read, or bytes that made no sense. */
  private checkDb(): void {
    const db = this.db!;
    if (db.state === "db") return;
    if (db.state === "encrypted") {
      if (db.failReason === "TLS") this.markNotDecrypted();
      else this.tags.encrypted = db.failReason;
      this.mode = "opaque";
      return;
    }
    this.giveUp(db.failReason, false);
  }

  private startHttp(kind: "http1" | "http2"): void {
    const conn = this.conn;
    const isOutbound = conn.direction === "outbound";
    const { parents, payloadLimit } = this.deps;
    this.mode = "http";
    if (kind === "http2") this.httpVersion = "2";
    const hooks: Http1SessionHooks = {
      newEventId: this.deps.newEventId,
      openWebSocket: (ex, at) => this.openWebSocket(ex, "2", at),
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

  /** A WebSocket on this connection: its messages are events whose parent is the handshake's. */
  private openWebSocket(ex: Exchange, httpVersion: string, at: number): WebSocketSession {
    const { deps, conn } = this;
    const extensions = negotiatedExtensions(headerValues(ex.response?.headers, "sec-websocket-extensions"));
    const session = new WebSocketSession(
      {
        onMessage: (message, totals) => {
          if (totals) deps.stats.webSocketDropped += totals.dropped;
          const ws: WsWork = { message, totals, parentEventId: ex.eventId, httpVersion, eventId: deps.newEventId() };
          deps.enqueue({ kind: "ws", ws, conn, proc: this.proc });
        },
      },
      {
        payloadLimit: deps.payloadLimit,
        deflate: "deflate" in extensions ? extensions.deflate : null,
        budget: deps.webSocketBudget,
        decodeBudget: deps.decodeBudget,
        openedAt: Math.max(at, ex.responseEndAt),
      },
    );
    if ("unsupported" in extensions) {
      session.state = "failed";
      session.failReason = `the extension ${extensions.unsupported}, which the tracer cannot read`;
    }
    return session;
  }

  /** An HTTP/1.1 connection upgraded to a WebSocket: frames from here, starting with what each side already sent. */
  private switchToWebSocket(from: Http1Session, at: number): void {
    const upgraded = from.upgraded!;
    const session = this.openWebSocket(upgraded.exchange, `1.${upgraded.exchange.request.versionMinor}`, at);
    this.session = session;
    if (upgraded.clientBytes.length > 0) session.onData(true, upgraded.clientBytes, at);
    if (upgraded.serverBytes.length > 0) session.onData(false, upgraded.serverBytes, at);
  }

  private checkSession(at = 0): void {
    let s = this.session!;
    if (s.state === "opaque" && s instanceof Http1Session && s.upgraded && this.mode === "http") {
      if (s.upgradedTo === "websocket") this.switchToWebSocket(s, at);
      else this.switchToHttp2(s, at);
      s = this.session!;
    }
    if (s.state === "http" || this.mode !== "http") return;
    if (s instanceof WebSocketSession) {
      // Its bytes are still counted for its last event; it reads no more frames.
      if (!this.hasWebSocketFailed) {
        this.hasWebSocketFailed = true;
        this.deps.stats.parserGaveUp++;
      }
      return;
    }
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

function headerValues(headers: Array<[string, string]> | undefined, name: string): string[] {
  const values: string[] = [];
  for (const [n, v] of headers ?? []) if (n.length === name.length && n.toLowerCase() === name) values.push(v);
  return values;
}
