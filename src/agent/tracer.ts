import { randomUUID } from "node:crypto";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import {
  buildHttpEvent,
  buildTcpEvent,
  type ConnectionSummary,
  type EventContext,
  type HostMetadata,
  ProcessCache,
  type ProcessInfo,
  readProcessInfo,
} from "./event.ts";
import type { Exchange } from "./parse/exchange.ts";
import { Http1Session, type Http1SessionHooks } from "./parse/http1-session.ts";
import { Http2Session } from "./parse/http2-session.ts";
import { MAX_SNIFF_BYTES, sniff, tlsServerName } from "./parse/sniff.ts";
import type { RedactMode } from "./redact.ts";
import type { ConnectionInfo, ConnectionObserver, ConnectionTap } from "./relay/observer.ts";
import { errorMessage } from "~/lib/errors.ts";

export type TracerOptions = {
  /** Receives each finished event, off the relay's data path (batched on setImmediate). */
  onEvent(event: CapturedEvent): void;
  host: HostMetadata;
  service?: string;
  redact?: RedactMode;
  /** Body bytes kept per message and direction. */
  payloadLimit?: number;
  /** Finished exchanges waiting to become events; beyond this they are dropped and counted. */
  maxQueued?: number;
  processInfo?: (pid: number) => ProcessInfo;
  /** Record inbound connections on which nothing was sent (health checks); off by default. */
  recordEmptyConnections?: boolean;
};

export type TracerStats = {
  connections: number;
  openConnections: number;
  httpEvents: number;
  tcpEvents: number;
  /** Connections the parser gave up on (recorded as tcp). */
  parserGaveUp: number;
  /** Exceptions caught inside a tap: the connection became passthrough. */
  tapErrors: number;
  droppedEvents: number;
  bytesFromClients: number;
  bytesFromServers: number;
};

export type Tracer = ConnectionObserver & {
  stats(): TracerStats;
  /** Turns every queued exchange into an event now (used at exit and in tests). */
  flush(): void;
};

export const DEFAULT_PAYLOAD_LIMIT = 64 * 1024;

type Pending =
  | { kind: "http"; ex: Exchange; conn: ConnectionInfo; proc: ProcessInfo }
  | { kind: "tcp"; sum: ConnectionSummary; conn: ConnectionInfo; proc: ProcessInfo };

type Mode = "sniff" | "http1" | "tls-hello" | "opaque";

/** A ClientHello is one record of at most 16 KiB. */
const MAX_HELLO_RECORD = 5 + 16 * 1024;

export function createTracer(options: TracerOptions): Tracer {
  const ctx: EventContext = {
    host: options.host,
    service: options.service,
    redact: options.redact ?? "redact",
    payloadLimit: Math.max(0, options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT),
  };
  const maxQueued = options.maxQueued ?? 10_000;
  const processes = new ProcessCache(options.processInfo ?? ((pid) => readProcessInfo(pid, "/proc", ctx.redact)));
  const stats: TracerStats = {
    connections: 0,
    openConnections: 0,
    httpEvents: 0,
    tcpEvents: 0,
    parserGaveUp: 0,
    tapErrors: 0,
    droppedEvents: 0,
    bytesFromClients: 0,
    bytesFromServers: 0,
  };
  /** Inbound requests in flight, per process, oldest first: the parents of outbound calls. */
  const inflight = new Map<number, Exchange[]>();
  let queue: Pending[] = [];
  let isScheduled = false;

  /** Events built per event-loop turn: relayed traffic gets its turn between slices. */
  const SLICE = 256;
  let head = 0;

  function build(item: Pending): void {
    let event: CapturedEvent;
    try {
      event = item.kind === "http" ? buildHttpEvent(item.ex, item.conn, item.proc, ctx) : buildTcpEvent(item.sum, item.conn, item.proc, ctx);
    } catch {
      stats.droppedEvents++;
      return;
    }
    if (item.kind === "http") stats.httpEvents++;
    else stats.tcpEvents++;
    try {
      options.onEvent(event);
    } catch {
      // The consumer's failure is its own; the tracer keeps going.
    }
  }

  function drainSlice(): void {
    isScheduled = false;
    const stop = Math.min(queue.length, head + SLICE);
    while (head < stop) build(queue[head++]!);
    if (head >= queue.length) {
      queue = [];
      head = 0;
    } else {
      if (head > 4096) {
        queue = queue.slice(head);
        head = 0;
      }
      isScheduled = true;
      setImmediate(drainSlice);
    }
  }

  /** Everything queued, now (exit, tests). */
  function drain(): void {
    while (head < queue.length) build(queue[head++]!);
    queue = [];
    head = 0;
  }

  function enqueue(item: Pending): void {
    if (queue.length - head >= maxQueued) {
      stats.droppedEvents++;
      return;
    }
    queue.push(item);
    if (!isScheduled) {
      isScheduled = true;
      setImmediate(drainSlice);
    }
  }

  function currentParent(pid: number): string {
    const list = inflight.get(pid);
    return list && list.length > 0 ? list[list.length - 1]!.eventId : "";
  }

  function removeInflight(pid: number, ex: Exchange): void {
    const list = inflight.get(pid);
    if (!list) return;
    const i = list.lastIndexOf(ex);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) inflight.delete(pid);
  }

  class TracedConnection implements ConnectionTap {
    private mode: Mode = "sniff";
    private session: Http1Session | Http2Session | null = null;
    private hooks: Http1SessionHooks | null = null;
    private sniffBuf: Uint8Array | null = null;
    private sniffLen = 0;
    private sniffAt = 0;
    private bytesFromClient = 0;
    private bytesFromServer = 0;
    private readonly tags: Record<string, string> = {};
    private tlsName = "";
    private hello: Uint8Array | null = null;
    private helloLen = 0;
    private httpVersion = "";
    private isClosed = false;
    private readonly parentEventId: string;
    private readonly proc: ProcessInfo;

    constructor(private readonly conn: ConnectionInfo) {
      this.proc = processes.get(conn.pid);
      this.parentEventId = conn.direction === "outbound" ? currentParent(conn.pid) : "";
    }

    onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
      if (fromClient) this.bytesFromClient += chunk.length;
      else this.bytesFromServer += chunk.length;
      if (this.mode === "opaque") return;
      try {
        if (this.mode === "http1") {
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
      if (this.mode !== "http1") return;
      try {
        this.session!.onEnd(fromClient, at);
        this.checkSession();
      } catch (error) {
        this.giveUp(`tap error: ${errorMessage(error)}`, true);
      }
    }

    onClose(at: number, error?: string): void {
      if (this.isClosed) return;
      this.isClosed = true;
      stats.openConnections--;
      stats.bytesFromClients += this.bytesFromClient;
      stats.bytesFromServers += this.bytesFromServer;
      if (this.mode === "sniff" && this.sniffLen > 0) this.decideUnknown("closed before the protocol was known");
      if (this.mode === "tls-hello") this.finishHello();
      if (this.session) {
        try {
          this.session.onClose(at, error);
          this.checkSession();
        } catch {
          stats.tapErrors++;
        }
        // A connection that was HTTP all along (or upgraded) is fully described by its exchanges.
        if (this.mode === "http1" || this.session.state === "opaque") return;
      }
      const isEmpty = this.bytesFromClient === 0 && this.bytesFromServer === 0;
      if (isEmpty && this.conn.direction === "inbound" && !options.recordEmptyConnections) return;
      if (error) this.tags.error = error;
      enqueue({
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
          eventId: randomUUID(),
          parentEventId: this.parentEventId,
        },
      });
    }

    private sniffData(fromClient: boolean, chunk: Uint8Array, at: number): void {
      if (!fromClient) {
        // The server spoke first (databases, SMTP) or answered a partial line: not HTTP/1 from a client.
        this.tags.reason = this.sniffLen === 0 ? "server spoke first" : "not http";
        this.mode = "opaque";
        this.sniffBuf = null;
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
      if (kind === "more") {
        if (this.sniffLen === 0) this.appendSniff(chunk);
        if (this.sniffLen >= MAX_SNIFF_BYTES) this.decideUnknown("request line too long");
        return;
      }
      if (kind === "http1" || kind === "http2") {
        this.startHttp(kind);
        const session = this.session!;
        const sniffed = this.sniffBuf;
        this.sniffBuf = null;
        this.sniffLen = 0;
        if (held > 0 && sniffed) session.onData(true, sniffed.subarray(0, held), this.sniffAt);
        session.onData(true, chunk, at);
        this.checkSession();
        return;
      }
      if (kind === "tls") {
        this.tags.tls = "true";
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
    }

    private startHttp(kind: "http1" | "http2"): void {
      const pid = this.conn.pid;
      const isOutbound = this.conn.direction === "outbound";
      this.mode = "http1";
      if (kind === "http2") this.httpVersion = "2";
      const hooks: Http1SessionHooks = {
        newEventId: randomUUID,
        parentEventId: () => currentParent(pid),
        onRequestStart: (ex) => {
          if (isOutbound) return;
          const list = inflight.get(pid);
          if (list) list.push(ex);
          else inflight.set(pid, [ex]);
        },
        onExchange: (ex) => {
          if (!isOutbound) removeInflight(pid, ex);
          enqueue({ kind: "http", ex, conn: this.conn, proc: this.proc });
        },
      };
      const options = { payloadLimit: ctx.payloadLimit, isOutbound };
      this.hooks = hooks;
      this.session = kind === "http2" ? new Http2Session(hooks, options) : new Http1Session(hooks, options);
    }

    /** An HTTP/1 connection upgraded to h2c: HTTP/2 from here, starting with what each side already sent. */
    private switchToHttp2(from: Http1Session, at: number): void {
      const upgraded = from.upgraded!;
      const next = new Http2Session(this.hooks!, { payloadLimit: ctx.payloadLimit, isOutbound: this.conn.direction === "outbound" });
      next.adoptUpgradedRequest(upgraded.exchange);
      this.session = next;
      this.httpVersion = "2";
      if (upgraded.clientBytes.length > 0) next.onData(true, upgraded.clientBytes, at);
      if (upgraded.serverBytes.length > 0) next.onData(false, upgraded.serverBytes, at);
    }

    private checkSession(at = 0): void {
      let s = this.session!;
      if (s.state === "opaque" && s instanceof Http1Session && s.upgraded && this.mode === "http1") {
        this.switchToHttp2(s, at);
        s = this.session!;
      }
      if (s.state === "http" || this.mode !== "http1") return;
      if (s.state === "failed") this.giveUp(s.failReason, false);
      else this.mode = "opaque";
    }

    private giveUp(reason: string, isTapError: boolean): void {
      if (isTapError) stats.tapErrors++;
      else stats.parserGaveUp++;
      this.tags.passthrough = reason.slice(0, 200);
      this.mode = "opaque";
      this.sniffBuf = null;
      if (this.session && this.session.state === "http") {
        this.session.state = "failed";
        this.session.failReason = reason;
      }
    }
  }

  return {
    onOpen(info: ConnectionInfo): ConnectionTap | null {
      stats.connections++;
      stats.openConnections++;
      return new TracedConnection(info);
    },
    stats: () => ({ ...stats }),
    flush: drain,
  };
}
