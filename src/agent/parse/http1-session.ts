import type { UnansweredReason } from "~/lib/protocol/event.ts";
import { BodySample } from "./body.ts";
import type { Exchange } from "./exchange.ts";
import { type Http1Handler, type Http1Head, Http1Parser, type ResponseFraming } from "./http1.ts";
import type { WebSocketSession } from "./websocket.ts";

export type Http1SessionHooks = {
  newEventId(): string;
  /** HTTP/2's extended CONNECT (RFC 8441) answered 2xx for a WebSocket: the session its stream's DATA goes to. */
  openWebSocket?(exchange: Exchange, at: number): WebSocketSession;
  /** The parent of a request starting now ("" for none). */
  parentEventId(): string;
  /** A request head was seen (inbound: it is now in flight). */
  onRequestStart(exchange: Exchange): void;
  /** Both sides are done, or the exchange will never complete. Called once per exchange. */
  onExchange(exchange: Exchange): void;
};

export type Http1SessionOptions = {
  payloadLimit: number;
  /** Requests waiting for their response; more means something is off: the session gives up. */
  maxPipelined?: number;
  maxHeadBytes?: number;
  isOutbound: boolean;
};

const HOLDBACK_LIMIT = 64 * 1024;

/**
 * RFC 9112 6.1: a message with both Content-Length and Transfer-Encoding may be read by one peer by its length and by
 * another by its chunks (request smuggling), so where the next message starts is unknown. Such a message is recorded
 * with its answer and marked; nothing after it on the connection is parsed.
 */
const AMBIGUOUS = "Content-Length and Transfer-Encoding together (RFC 9112 6.1)";
const hasAmbiguousFraming = (head: Http1Head) => head.contentLength >= 0 && head.transferEncoding !== "";

/**
 * Pairs the two directions of one HTTP/1 connection into exchanges: keep-alive, pipelining (responses
 * answer requests in order), interim responses, HEAD, upgrades and CONNECT tunnels. Once the
 * connection stops being HTTP/1 (upgrade, tunnel) it is "opaque"; when the parsers cannot follow it,
 * "failed". Either way the caller keeps counting bytes.
 */
export class Http1Session {
  state: "http" | "opaque" | "failed" = "http";
  failReason = "";
  /** What the connection became after a successful upgrade ("websocket", "h2c"), or "tunnel". */
  upgradedTo = "";
  exchangeCount = 0;
  /**
   * After a 101 to h2c or websocket: the upgrading exchange (h2c: its response comes on stream 1) and the bytes each
   * side sent after the switch.
   */
  upgraded: { exchange: Exchange; clientBytes: Uint8Array; serverBytes: Uint8Array } | null = null;
  /** A CONNECT answered 2xx: its event waits for the tunnel to close, so that it lasts as long as the tunnel. */
  tunnel: Exchange | null = null;

  private readonly req: Http1Parser;
  private readonly resp: Http1Parser;
  /** Exchanges whose response has not completed, oldest first. */
  private readonly pending: Exchange[] = [];
  private currentRequest: Exchange | null = null;
  private currentResponse: Exchange | null = null;
  private upgradeCandidate: Exchange | null = null;
  /** When the client's FIN came; 0 before. */
  private clientEndedAt = 0;
  /** A message whose framing cannot be trusted: the connection gives up once this exchange is recorded. */
  private ambiguous: Exchange | null = null;
  private holdback: Uint8Array | null = null;
  private holdbackLength = 0;
  private holdbackAt = 0;

  constructor(
    private readonly hooks: Http1SessionHooks,
    private readonly options: Http1SessionOptions,
  ) {
    const maxHead = options.maxHeadBytes ?? 64 * 1024;
    this.req = new Http1Parser("request", this.requestHandler(), maxHead);
    this.resp = new Http1Parser("response", this.responseHandler(), maxHead);
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (this.state !== "http") return;
    if (fromClient) {
      // The request side stopped at an ambiguous message: what follows may be its body or more requests.
      if (this.ambiguous) return;
      if (this.upgradeCandidate) {
        this.hold(chunk, 0, chunk.length, at);
        return;
      }
      const used = this.req.push(chunk, 0, chunk.length, at);
      if (this.req.hasFailed) this.fail(`request: ${this.req.errorMessage}`);
      else if (used < chunk.length && this.state === "http") this.hold(chunk, used, chunk.length, at);
      return;
    }
    const used = this.resp.push(chunk, 0, chunk.length, at);
    if (this.resp.hasFailed) this.fail(`response: ${this.resp.errorMessage}`);
    else if (this.upgraded && used < chunk.length) this.upgraded.serverBytes = chunk.slice(used);
  }

  /**
   * A FIN. The server's: what it has not begun to answer never will be, and is recorded now. The client's: it may have
   * given up (curl --max-time, a browser's cancel) or only half-closed after its requests and still read the answers
   * (nc, a shell's pipe); the caller decides after a while without a response head (giveUpUnanswered), and a close
   * before then counts the request as given up on at this FIN.
   */
  onEnd(fromClient: boolean, at: number): void {
    if (this.state !== "http") return;
    if (fromClient) {
      if (this.clientEndedAt === 0) this.clientEndedAt = Math.max(at, 1);
      return;
    }
    this.resp.end(at);
    this.abandonUnanswered(...this.unansweredAs("server_closed", at));
  }

  /** Requests sent and still without a response head, oldest first. */
  *unanswered(): IterableIterator<Exchange> {
    if (this.state !== "http") return;
    for (const ex of this.pending) if (ex.response === null) yield ex;
  }

  /** Requests sent and without a response head. */
  hasUnanswered(): boolean {
    return this.pending.some((ex) => ex.response === null);
  }

  /** After the client's FIN, the requests still without a response head were given up on then. */
  giveUpUnanswered(): void {
    if (this.state === "http" && this.clientEndedAt > 0) this.abandonUnanswered("client_aborted", this.clientEndedAt);
  }

  /** A client that sent its FIN before the request ended gave up on it, whatever ended it then. */
  private unansweredAs(reason: UnansweredReason, at: number): [UnansweredReason, number] {
    return this.clientEndedAt > 0 ? ["client_aborted", this.clientEndedAt] : [reason, at];
  }

  /** The connection is gone: whatever is still open is reported as incomplete; a tunnel's CONNECT ends now. */
  onClose(at: number, error?: string): void {
    if (this.state === "http") this.resp.end(at);
    this.abandonPending(error ? `connection closed: ${error}` : "connection closed before the response completed", at, closeReason(error));
    const tunnel = this.tunnel;
    if (tunnel) {
      this.tunnel = null;
      tunnel.tunnelClosedAt = Math.max(at, tunnel.responseEndAt);
      this.hooks.onExchange(tunnel);
    }
  }

  private fail(reason: string): void {
    if (this.state !== "http") return;
    this.state = "failed";
    this.failReason = reason;
    this.abandonPending(`parser gave up: ${reason}`, 0);
  }

  /** Ends the requests that have no response head yet as unanswered; the rest stay pending. */
  private abandonUnanswered(reason: UnansweredReason, at: number): void {
    const open = this.pending.filter((ex) => ex.response === null);
    if (open.length === 0) return;
    const answered = this.pending.filter((ex) => ex.response !== null);
    this.pending.splice(0, this.pending.length, ...answered);
    if (this.upgradeCandidate && open.includes(this.upgradeCandidate)) this.upgradeCandidate = null;
    const current = this.currentRequest;
    if (current && open.includes(current)) {
      current.requestBodyWire = this.req.bodyBytes;
      this.currentRequest = null;
    }
    for (const ex of open) {
      ex.incompleteReason = unansweredText[reason];
      finishUnanswered(ex, reason, at);
      this.hooks.onExchange(ex);
    }
  }

  private abandonPending(reason: string, at: number, unanswered?: UnansweredReason): void {
    const open = this.pending.splice(0);
    const current = this.currentRequest;
    if (current && !current.isRequestDone && !open.includes(current)) open.push(current);
    this.currentRequest = null;
    this.currentResponse = null;
    for (const ex of open) {
      if (ex.isRequestDone && ex.isResponseDone) continue;
      ex.incompleteReason = reason;
      if (!ex.isRequestDone) {
        ex.requestEndAt = Math.max(ex.requestStartAt, at);
        ex.requestBodyWire = ex === current ? this.req.bodyBytes : ex.requestBodyWire;
      }
      if (ex.response && !ex.isResponseDone) {
        ex.responseEndAt = Math.max(ex.responseStartAt, at);
        ex.responseBodyWire = this.resp.bodyBytes;
      }
      if (unanswered && !ex.response) finishUnanswered(ex, ...this.unansweredAs(unanswered, at));
      ex.isRequestDone = true;
      ex.isResponseDone = true;
      this.hooks.onExchange(ex);
    }
  }

  private hold(chunk: Uint8Array, start: number, end: number, at: number): void {
    const n = end - start;
    if (this.holdbackLength + n > HOLDBACK_LIMIT) {
      this.becomeOpaque("unknown");
      return;
    }
    if (!this.holdback) this.holdback = new Uint8Array(Math.min(HOLDBACK_LIMIT, Math.max(4096, n)));
    if (this.holdbackLength + n > this.holdback.length) {
      const next = new Uint8Array(Math.min(HOLDBACK_LIMIT, Math.max(this.holdbackLength + n, this.holdback.length * 2)));
      next.set(this.holdback.subarray(0, this.holdbackLength));
      this.holdback = next;
    }
    this.holdback.set(chunk.subarray(start, end), this.holdbackLength);
    if (this.holdbackLength === 0) this.holdbackAt = at;
    this.holdbackLength += n;
  }

  private becomeOpaque(upgradedTo: string, exchange?: Exchange): void {
    this.state = "opaque";
    this.upgradedTo = upgradedTo;
    if ((upgradedTo === "h2c" || upgradedTo === "websocket") && exchange) {
      // The new protocol follows: keep what each side already sent of it for the session that reads it.
      this.upgraded = {
        exchange,
        clientBytes: this.holdback ? this.holdback.slice(0, this.holdbackLength) : new Uint8Array(0),
        serverBytes: new Uint8Array(0),
      };
    }
    this.req.becomeOpaque();
    this.resp.becomeOpaque();
    this.holdback = null;
    this.holdbackLength = 0;
  }

  /** The upgrade or CONNECT was refused: the request side is HTTP/1 again; replay what it sent meanwhile. */
  private resumeRequests(): void {
    this.upgradeCandidate = null;
    this.req.resume();
    const held = this.holdback;
    const length = this.holdbackLength;
    this.holdback = null;
    this.holdbackLength = 0;
    if (held && length > 0) {
      const used = this.req.push(held, 0, length, this.holdbackAt);
      if (this.req.hasFailed) this.fail(`request: ${this.req.errorMessage}`);
      else if (used < length) this.hold(held, used, length, this.holdbackAt);
    }
  }

  private maybeEmit(ex: Exchange): void {
    if (!ex.isRequestDone || !ex.isResponseDone) return;
    this.hooks.onExchange(ex);
  }

  private requestHandler(): Http1Handler {
    return {
      onHead: (head: Http1Head, startAt: number, at: number): ResponseFraming | undefined => {
        const limit = this.options.payloadLimit;
        const ex: Exchange = {
          eventId: this.hooks.newEventId(),
          parentEventId: this.options.isOutbound ? this.hooks.parentEventId() : "",
          request: head,
          response: null,
          requestStartAt: startAt,
          requestEndAt: startAt,
          responseStartAt: 0,
          responseEndAt: 0,
          requestBodyWire: 0,
          responseBodyWire: 0,
          requestBody: limit > 0 && hasRequestBody(head) ? new BodySample(limit, head.contentLength) : null,
          responseBody: null,
          requestTrailers: null,
          responseTrailers: null,
          interimStatuses: [],
          isRequestDone: false,
          isResponseDone: false,
          isFirstOnConnection: this.exchangeCount === 0,
          incompleteReason: "",
        };
        this.exchangeCount++;
        this.pending.push(ex);
        this.hooks.onRequestStart(ex);
        if (this.pending.length > (this.options.maxPipelined ?? 1024)) this.fail("too many requests without a response");
        if (hasAmbiguousFraming(head)) {
          // Recorded without its body (its length is what is in doubt); its response is still the next one.
          ex.requestBody = null;
          ex.requestEndAt = at;
          ex.isRequestDone = true;
          ex.ambiguousFraming = `request: ${AMBIGUOUS}`;
          this.ambiguous = ex;
          return "tunnel";
        }
        this.currentRequest = ex;
        return undefined;
      },
      onBody: (chunk, start, end) => {
        // The parser is fed the relay's reads (or buffers of ours that are never reused): views may be kept.
        this.currentRequest?.requestBody?.add(chunk, start, end, true);
      },
      onComplete: (at, trailers) => {
        const ex = this.currentRequest;
        if (!ex) return;
        this.currentRequest = null;
        ex.requestEndAt = at;
        ex.requestBodyWire = this.req.bodyBytes;
        ex.requestTrailers = trailers;
        ex.isRequestDone = true;
        const head = ex.request;
        const isUpgrade = head.upgrade !== "" && head.hasConnectionUpgrade;
        if ((isUpgrade || head.method === "CONNECT") && !ex.isResponseDone) {
          // What the client sends next depends on the answer: the new protocol, or HTTP/1 again.
          this.upgradeCandidate = ex;
          this.req.pause();
        }
        this.maybeEmit(ex);
      },
    };
  }

  private responseHandler(): Http1Handler {
    return {
      onHead: (head: Http1Head, startAt: number, at: number): ResponseFraming | undefined => {
        const ex = this.pending[0];
        if (!ex) {
          // An unsolicited response (a 408 on an idle keep-alive connection): nothing to pair it with,
          // and nothing after it is worth parsing.
          this.becomeOpaque("");
          return "tunnel";
        }
        if (head.status >= 100 && head.status < 200 && head.status !== 101) {
          ex.interimStatuses.push(head.status);
          return "interim";
        }
        ex.response = head;
        ex.responseStartAt = startAt;
        this.currentResponse = ex;
        if (hasAmbiguousFraming(head)) {
          // Its body's end is in doubt: the exchange ends at the head, and the connection with it.
          ex.ambiguousFraming ||= `response: ${AMBIGUOUS}`;
          this.ambiguous = ex;
          return "bodiless";
        }
        const method = ex.request.method;
        const isSwitch = head.status === 101;
        const isTunnel = method === "CONNECT" && head.status >= 200 && head.status < 300;
        if (isSwitch || isTunnel) {
          this.pending.shift();
          this.currentResponse = null;
          ex.responseEndAt = at;
          ex.isResponseDone = true;
          if (!ex.isRequestDone) {
            ex.isRequestDone = true;
            ex.requestEndAt = at;
            ex.requestBodyWire = this.req.bodyBytes;
            this.currentRequest = null;
          }
          if (isTunnel) this.tunnel = ex;
          else this.hooks.onExchange(ex);
          this.becomeOpaque(isTunnel ? "tunnel" : head.upgrade.toLowerCase() || "unknown", ex);
          return "tunnel";
        }
        if (this.upgradeCandidate === ex) this.resumeRequests();
        const isBodiless = method === "HEAD" || head.status === 204 || head.status === 304;
        const limit = this.options.payloadLimit;
        if (limit > 0 && !isBodiless && head.contentLength !== 0) {
          ex.responseBody = new BodySample(limit, head.contentLength);
        }
        return isBodiless ? "bodiless" : "normal";
      },
      onBody: (chunk, start, end) => {
        this.currentResponse?.responseBody?.add(chunk, start, end, true);
      },
      onComplete: (at, trailers) => {
        const ex = this.currentResponse;
        if (!ex) return;
        this.currentResponse = null;
        if (this.pending[0] === ex) this.pending.shift();
        ex.responseEndAt = at;
        ex.responseBodyWire = this.resp.bodyBytes;
        ex.responseTrailers = trailers;
        ex.isResponseDone = true;
        this.maybeEmit(ex);
        if (ex === this.ambiguous) this.fail(`ambiguous framing: ${ex.ambiguousFraming}`);
      },
    };
  }
}

/** What a close says of the requests it leaves without an answer; none when the tracer itself stopped following. */
export function closeReason(error: string | undefined): UnansweredReason | undefined {
  if (!error) return "server_closed";
  return error.startsWith("tap detached") ? undefined : "reset";
}

export const unansweredText: Record<UnansweredReason, string> = {
  client_aborted: "the client gave up before a response",
  server_closed: "the server closed the connection without a response",
  reset: "reset before a response",
};

/** Marks an exchange that will never get a response head; a request still being sent ends with it. */
export function finishUnanswered(ex: Exchange, reason: UnansweredReason, at: number): void {
  const endAt = Math.max(ex.requestStartAt, at);
  ex.unanswered = { reason, at: endAt };
  if (!ex.isRequestDone) ex.requestEndAt = endAt;
  ex.isRequestDone = true;
  ex.isResponseDone = true;
}

function hasRequestBody(head: Http1Head): boolean {
  return head.isChunked || head.contentLength > 0;
}
