import { errorMessage } from "~/lib/errors.ts";
import type { UnansweredReason } from "~/lib/protocol/event.ts";
import { BodySample } from "./body.ts";
import type { Exchange } from "./exchange.ts";
import { HpackDecoder } from "./hpack.ts";
import type { Http1Head } from "./http1.ts";
import { closeReason, finishUnanswered, type Http1SessionHooks, unansweredText } from "./http1-session.ts";
import type { WebSocketSession } from "./websocket.ts";

/**
 * HTTP/2 with prior knowledge (h2c, as gRPC uses it): frames of both directions, header blocks
 * (HEADERS + CONTINUATION) through one HPACK decoder per direction, streams paired into exchanges
 * with their DATA, trailers (gRPC status), RST_STREAM. Frame payloads other than DATA are gathered
 * (bounded); DATA is never copied beyond the kept sample.
 *
 * A client's preface alone proves nothing about the server: what the client sends is held (bounded) until the
 * server's first frame is its SETTINGS, so a client cannot make the tracer record requests a server that does not
 * speak HTTP/2 never handled. Header blocks are bounded twice: each decodes to at most a header list's bound
 * (hpack.ts), and what a direction's blocks decode to in all may exceed the bytes it sent only by a fixed ratio,
 * so the work of turning them into events stays proportional to the bytes received.
 */
export type Http2SessionOptions = { payloadLimit: number; isOutbound: boolean; maxStreams?: number };

const PREFACE_LENGTH = 24;
const MAX_FRAME_GATHER = 1024 * 1024;
const MAX_HEADER_BLOCK = 256 * 1024;
/** What a client may send before the server's SETTINGS arrives (the initial flow-control window is 64 KiB). */
const MAX_HELD_BEFORE_SETTINGS = 128 * 1024;
/**
 * Header list bytes (hpack.ts's measure) one direction's blocks may decode to: a start, then this many per byte the
 * direction sent. HPACK legitimately compresses repeated headers well (a 4 KB cookie sent as a 2-byte reference
 * on every request is about 110:1 with the rest of the request); a hostile peer gets no more than the ratio.
 */
const HEADER_EXPANSION_START = 256 * 1024;
const HEADER_EXPANSION_RATIO = 256;

const Type = { Data: 0, Headers: 1, RstStream: 3, Settings: 4, PushPromise: 5, Continuation: 9 } as const;

const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;

class Http2Error extends Error {}

/** Frames of one direction. */
class FrameReader {
  private header = new Uint8Array(9);
  private headerLen = 0;
  private type = 0;
  private flags = 0;
  private streamId = 0;
  private length = 0;
  private read = 0;
  private payload: Uint8Array | null = null;
  // DATA: padding bookkeeping while streaming.
  private padLength = -1;
  /** The header block being gathered across HEADERS/PUSH_PROMISE + CONTINUATION. */
  block: { streamId: number; flags: number; parts: Uint8Array[]; size: number; isPush: boolean } | null = null;
  private prefaceLeft: number;

  constructor(
    hasPreface: boolean,
    private readonly onFrame: (type: number, flags: number, streamId: number, payload: Uint8Array, at: number) => void,
    private readonly onData: (streamId: number, chunk: Uint8Array, start: number, end: number, at: number) => void,
    private readonly onDataEnd: (streamId: number, flags: number, at: number) => void,
  ) {
    this.prefaceLeft = hasPreface ? PREFACE_LENGTH : 0;
  }

  push(chunk: Uint8Array, at: number): void {
    let i = 0;
    const end = chunk.length;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, end);
      this.prefaceLeft -= n;
      i = n;
    }
    while (i < end) {
      if (this.headerLen < 9) {
        // Byte by byte: cheaper than a subarray view for 9 bytes.
        while (this.headerLen < 9 && i < end) this.header[this.headerLen++] = chunk[i++]!;
        if (this.headerLen < 9) return;
        const h = this.header;
        this.length = (h[0]! << 16) | (h[1]! << 8) | h[2]!;
        this.type = h[3]!;
        this.flags = h[4]!;
        this.streamId = (h[5]! & 0x7f) * 2 ** 24 + ((h[6]! << 16) | (h[7]! << 8) | h[8]!);
        this.read = 0;
        this.padLength = this.type === Type.Data && this.flags & PADDED ? -2 : -1;
        if (this.type !== Type.Data) {
          if (this.length > MAX_FRAME_GATHER) throw new Http2Error("frame too large to follow");
          this.payload = this.length > 0 ? new Uint8Array(this.length) : null;
        }
        if (this.length === 0) this.finishFrame(at);
        continue;
      }
      const n = Math.min(this.length - this.read, end - i);
      if (this.type === Type.Data) this.streamData(chunk, i, i + n, at);
      else if (n <= 64) {
        const payload = this.payload!;
        for (let k = 0; k < n; k++) payload[this.read + k] = chunk[i + k]!;
      } else this.payload!.set(chunk.subarray(i, i + n), this.read);
      this.read += n;
      i += n;
      if (this.read === this.length) this.finishFrame(at);
    }
  }

  /** DATA bytes [start, end) at payload offset this.read: skip the pad length byte and the padding. */
  private streamData(chunk: Uint8Array, start: number, end: number, at: number): void {
    let s = start;
    if (this.padLength === -2 && s < end) {
      this.padLength = chunk[s]!;
      s++;
      if (this.padLength > this.length - 1) throw new Http2Error("padding longer than the frame");
    }
    const dataEnd = this.length - Math.max(0, this.padLength);
    // Payload offsets of [s, end): this.read + (s - start) ...
    const offset = this.read + (s - start);
    const stop = Math.min(end, s + Math.max(0, dataEnd - offset));
    if (stop > s) this.onData(this.streamId, chunk, s, stop, at);
  }

  private finishFrame(at: number): void {
    this.headerLen = 0;
    const payload = this.payload ?? new Uint8Array(0);
    this.payload = null;
    if (this.type === Type.Data) this.onDataEnd(this.streamId, this.flags, at);
    else this.onFrame(this.type, this.flags, this.streamId, payload, at);
  }
}

function lookup(headers: Array<[string, string]>, name: string): string {
  for (const [n, v] of headers) if (n === name) return v;
  return "";
}

function toHead(headers: Array<[string, string]>, blockSize: number): Http1Head {
  const regular = headers.filter(([n]) => !n.startsWith(":"));
  const contentLength = Number(lookup(regular, "content-length"));
  return {
    method: lookup(headers, ":method"),
    target: lookup(headers, ":path") || lookup(headers, ":authority"),
    status: Number(lookup(headers, ":status")) || 0,
    reason: "",
    versionMinor: 0,
    headers: regular,
    contentLength: lookup(regular, "content-length") !== "" && Number.isFinite(contentLength) ? contentLength : -1,
    isChunked: false,
    transferEncoding: "",
    contentEncoding: lookup(regular, "content-encoding"),
    contentType: lookup(regular, "content-type"),
    host: lookup(headers, ":authority") || lookup(regular, "host"),
    xForwardedFor: lookup(regular, "x-forwarded-for"),
    upgrade: "",
    hasConnectionClose: false,
    hasConnectionUpgrade: false,
    expectsContinue: false,
    headBytes: blockSize,
  };
}

export class Http2Session {
  state: "http" | "opaque" | "failed" = "http";
  failReason = "";
  upgradedTo = "";
  exchangeCount = 0;

  private readonly streams = new Map<number, Exchange>();
  /** Streams opened by an extended CONNECT for a WebSocket, and which of their sides ended. */
  private readonly webSockets = new Map<number, { session: WebSocketSession; hasClientEnded: boolean; hasServerEnded: boolean }>();
  private readonly client: FrameReader;
  private readonly server: FrameReader;
  private readonly clientHpack = new HpackDecoder();
  private readonly serverHpack = new HpackDecoder();
  /** The server's first frame was SETTINGS: it speaks HTTP/2, and the client's frames are parsed. */
  private hasServerSettings = false;
  /** When the client's FIN came; 0 before. */
  private clientEndedAt = 0;
  private readonly serverFirst = new Uint8Array(9);
  private serverFirstLength = 0;
  /** Client reads held until then (views: the relay never reuses a read's buffer). */
  private held: Array<{ chunk: Uint8Array; at: number }> = [];
  private heldBytes = 0;
  private readonly received = { client: 0, server: 0 };
  /** The time of the last read: when a parser that gives up ends the WebSockets on it. */
  private lastAt = 0;
  private readonly decoded = { client: 0, server: 0 };

  constructor(
    private readonly hooks: Http1SessionHooks,
    private readonly options: Http2SessionOptions,
  ) {
    this.client = new FrameReader(
      true,
      (type, flags, id, payload, at) => this.onFrame(true, type, flags, id, payload, at),
      (id, chunk, start, end, at) => this.onDataBytes(true, id, chunk, start, end, at),
      (id, flags, at) => this.onDataEnd(true, id, flags, at),
    );
    this.server = new FrameReader(
      false,
      (type, flags, id, payload, at) => this.onFrame(false, type, flags, id, payload, at),
      (id, chunk, start, end, at) => this.onDataBytes(false, id, chunk, start, end, at),
      (id, flags, at) => this.onDataEnd(false, id, flags, at),
    );
  }

  /**
   * h2c reached by an HTTP/1 Upgrade: the upgrading request becomes stream 1, already sent; its
   * response arrives as HTTP/2 on that stream.
   */
  adoptUpgradedRequest(original: Exchange): void {
    const ex: Exchange = {
      ...original,
      eventId: this.hooks.newEventId(),
      response: null,
      httpVersion: "2",
      responseStartAt: 0,
      responseEndAt: 0,
      responseBodyWire: 0,
      responseBody: null,
      responseTrailers: null,
      interimStatuses: [],
      isRequestDone: true,
      isResponseDone: false,
      isFirstOnConnection: false,
      incompleteReason: "",
    };
    this.exchangeCount++;
    this.streams.set(1, ex);
    this.hooks.onRequestStart(ex);
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (this.state !== "http") return;
    this.lastAt = at;
    try {
      if (fromClient) {
        this.received.client += chunk.length;
        if (this.hasServerSettings) this.client.push(chunk, at);
        else this.hold(chunk, at);
        return;
      }
      this.received.server += chunk.length;
      if (!this.hasServerSettings && !this.checkServerPreface(chunk, at)) return;
      this.server.push(chunk, at);
    } catch (error) {
      this.fail(errorMessage(error) || "bad frame");
    }
  }

  /** A FIN: as Http1Session.onEnd says, the server's ends the streams without response headers now, the client's later. */
  onEnd(fromClient: boolean, at: number): void {
    if (this.state !== "http" || !this.hasServerSettings) return;
    if (fromClient) {
      if (this.clientEndedAt === 0) this.clientEndedAt = Math.max(at, 1);
      return;
    }
    this.abandonUnanswered(...this.unansweredAs("server_closed", at));
  }

  /** Streams whose request was seen and whose response headers were not yet. */
  *unanswered(): IterableIterator<Exchange> {
    if (this.state !== "http") return;
    for (const ex of this.streams.values()) if (!ex.response) yield ex;
  }

  /** Streams whose request was seen and whose response headers were not. */
  hasUnanswered(): boolean {
    for (const ex of this.streams.values()) if (!ex.response) return true;
    return false;
  }

  /** After the client's FIN, the streams still without response headers were given up on then. */
  giveUpUnanswered(): void {
    if (this.state === "http" && this.clientEndedAt > 0) this.abandonUnanswered("client_aborted", this.clientEndedAt);
  }

  private abandonUnanswered(reason: UnansweredReason, at: number): void {
    for (const [id, ex] of this.streams) {
      if (ex.response) continue;
      this.streams.delete(id);
      this.finishIncomplete(ex, unansweredText[reason], at, reason);
    }
  }

  private unansweredAs(reason: UnansweredReason, at: number): [UnansweredReason, number] {
    return this.clientEndedAt > 0 ? ["client_aborted", this.clientEndedAt] : [reason, at];
  }

  onClose(at: number, error?: string): void {
    if (!this.hasServerSettings && this.state === "http") {
      this.fail("the server never answered with HTTP/2 SETTINGS");
      return;
    }
    this.abandon(error ? `connection closed: ${error}` : "connection closed before the stream completed", at, error, closeReason(error));
  }

  private hold(chunk: Uint8Array, at: number): void {
    this.heldBytes += chunk.length;
    if (this.heldBytes > MAX_HELD_BEFORE_SETTINGS) {
      throw new Http2Error(`the client sent over ${MAX_HELD_BEFORE_SETTINGS / 1024} KiB before the server's HTTP/2 SETTINGS`);
    }
    this.held.push({ chunk, at });
  }

  /**
   * Reads the server's first frame header: a SETTINGS frame on stream 0 lets the held client bytes through (they
   * were sent before this read, so they are parsed first); anything else is not HTTP/2. False while it is incomplete.
   */
  private checkServerPreface(chunk: Uint8Array, at: number): boolean {
    const n = Math.min(9 - this.serverFirstLength, chunk.length);
    this.serverFirst.set(chunk.subarray(0, n), this.serverFirstLength);
    this.serverFirstLength += n;
    if (this.serverFirstLength < 9) {
      // The frame reader gathers the header too; nothing is reported before it is whole.
      this.server.push(chunk, at);
      return false;
    }
    const h = this.serverFirst;
    if (h[3] !== Type.Settings || (h[5]! & 0x7f) !== 0 || h[6] !== 0 || h[7] !== 0 || h[8] !== 0) {
      throw new Http2Error("the server did not answer with HTTP/2 SETTINGS");
    }
    this.hasServerSettings = true;
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (const { chunk: c, at } of held) this.client.push(c, at);
    return true;
  }

  private fail(reason: string): void {
    if (this.state !== "http") return;
    this.state = "failed";
    this.failReason = reason;
    this.abandon(`parser gave up: ${reason}`, 0, `the HTTP/2 parser gave up: ${reason}`);
  }

  /**
   * `error`: what ended the connection (or the parser) for the WebSockets on it; none when it just closed.
   * `unanswered`: why its streams without response headers got none.
   */
  private abandon(reason: string, at: number, error?: string, unanswered?: UnansweredReason): void {
    for (const ex of this.streams.values()) this.finishIncomplete(ex, reason, at, unanswered);
    this.streams.clear();
    for (const ws of this.webSockets.values()) ws.session.onClose(at || this.lastAt, error);
    this.webSockets.clear();
  }

  /** `unanswered`: why a stream without response headers got none (a stream already answering is only cut short). */
  private finishIncomplete(ex: Exchange, reason: string, at: number, unanswered?: UnansweredReason): void {
    ex.incompleteReason = reason;
    if (unanswered && !ex.response) finishUnanswered(ex, ...this.unansweredAs(unanswered, at));
    if (!ex.isRequestDone) ex.requestEndAt = Math.max(ex.requestStartAt, at);
    if (ex.response && !ex.isResponseDone) ex.responseEndAt = Math.max(ex.responseStartAt, at);
    ex.isRequestDone = true;
    ex.isResponseDone = true;
    this.hooks.onExchange(ex);
  }

  private onFrame(fromClient: boolean, type: number, flags: number, id: number, payload: Uint8Array, at: number): void {
    const reader = fromClient ? this.client : this.server;
    if (type === Type.Headers || type === Type.PushPromise) {
      if (reader.block) throw new Http2Error("header block interrupted");
      let p = 0;
      let end = payload.length;
      if (flags & PADDED) {
        const pad = payload[p++] ?? 0;
        end -= pad;
      }
      if (type === Type.Headers && flags & PRIORITY) p += 5;
      if (type === Type.PushPromise) p += 4;
      if (p > end) throw new Http2Error("bad header frame padding");
      const fragment = p === 0 && end === payload.length ? payload : payload.subarray(p, end);
      reader.block = { streamId: id, flags, parts: [fragment], size: end - p, isPush: type === Type.PushPromise };
      if (flags & END_HEADERS) this.finishBlock(fromClient, at);
      return;
    }
    if (type === Type.Continuation) {
      const block = reader.block;
      if (!block || block.streamId !== id) throw new Http2Error("unexpected CONTINUATION");
      block.parts.push(payload);
      block.size += payload.length;
      if (block.size > MAX_HEADER_BLOCK) throw new Http2Error("header block too large");
      if (flags & END_HEADERS) this.finishBlock(fromClient, at);
      return;
    }
    if (reader.block) throw new Http2Error("header block interrupted");
    if (type === Type.RstStream) {
      const ws = this.webSockets.get(id);
      if (ws) {
        this.webSockets.delete(id);
        ws.session.onClose(at, `stream reset by the ${fromClient ? "client" : "server"}`);
        return;
      }
      const ex = this.streams.get(id);
      if (!ex) return;
      this.streams.delete(id);
      const code = payload.length >= 4 ? ((payload[0]! << 24) >>> 0) + ((payload[1]! << 16) | (payload[2]! << 8) | payload[3]!) : -1;
      // A client that cancels its stream gave up on it; a server that resets one refused it.
      this.finishIncomplete(
        ex,
        `stream reset by the ${fromClient ? "client" : "server"} (code ${code})`,
        at,
        fromClient ? "client_aborted" : "reset",
      );
    }
    // SETTINGS, PING, GOAWAY, WINDOW_UPDATE, PRIORITY: nothing an exchange needs. Header table
    // size changes arrive as size updates inside the header blocks themselves.
  }

  private finishBlock(fromClient: boolean, at: number): void {
    const reader = fromClient ? this.client : this.server;
    const block = reader.block!;
    reader.block = null;
    const bytes = block.parts.length === 1 ? block.parts[0]! : Buffer.concat(block.parts);
    // Every block goes through the decoder, even ignored ones, to keep its table in step.
    const hpack = fromClient ? this.clientHpack : this.serverHpack;
    const headers = hpack.decode(bytes);
    const side = fromClient ? "client" : "server";
    this.decoded[side] += hpack.listSize;
    if (this.decoded[side] > HEADER_EXPANSION_START + HEADER_EXPANSION_RATIO * this.received[side]) {
      throw new Http2Error(`header blocks decode to over ${HEADER_EXPANSION_RATIO} times the bytes the ${side} sent`);
    }
    if (block.isPush) return;
    const isEnd = (block.flags & END_STREAM) !== 0;
    const id = block.streamId;
    if (fromClient) this.clientHeaders(id, headers, block.size, isEnd, at);
    else this.serverHeaders(id, headers, block.size, isEnd, at);
  }

  private clientHeaders(id: number, headers: Array<[string, string]>, size: number, isEnd: boolean, at: number): void {
    let ex = this.streams.get(id);
    if (!ex) {
      if (this.streams.size >= (this.options.maxStreams ?? 1000)) throw new Http2Error("too many open streams");
      const head = toHead(headers, size);
      const limit = this.options.payloadLimit;
      ex = {
        eventId: this.hooks.newEventId(),
        parentEventId: this.options.isOutbound ? this.hooks.parentEventId() : "",
        request: head,
        response: null,
        httpVersion: "2",
        requestStartAt: at,
        requestEndAt: at,
        responseStartAt: 0,
        responseEndAt: 0,
        requestBodyWire: 0,
        responseBodyWire: 0,
        requestBody: limit > 0 && !isEnd ? new BodySample(limit, head.contentLength) : null,
        responseBody: null,
        requestTrailers: null,
        responseTrailers: null,
        interimStatuses: [],
        isRequestDone: false,
        isResponseDone: false,
        isFirstOnConnection: this.exchangeCount === 0,
        incompleteReason: "",
      };
      const protocol = lookup(headers, ":protocol");
      if (protocol) ex.connectProtocol = protocol;
      this.exchangeCount++;
      this.streams.set(id, ex);
      this.hooks.onRequestStart(ex);
    } else if (!ex.isRequestDone) {
      ex.requestTrailers = headers;
    }
    if (isEnd) this.requestDone(id, ex, at);
  }

  private serverHeaders(id: number, headers: Array<[string, string]>, size: number, isEnd: boolean, at: number): void {
    const ex = this.streams.get(id);
    if (!ex) return;
    if (!ex.response) {
      const head = toHead(headers, size);
      if (head.status >= 100 && head.status < 200) {
        ex.interimStatuses.push(head.status);
        return;
      }
      ex.response = head;
      ex.responseStartAt = at;
      if (ex.connectProtocol?.toLowerCase() === "websocket" && head.status < 300 && this.hooks.openWebSocket) {
        this.startWebSocket(id, ex, isEnd, at);
        return;
      }
      const limit = this.options.payloadLimit;
      if (limit > 0 && !isEnd && ex.request.method !== "HEAD") ex.responseBody = new BodySample(limit, head.contentLength);
    } else {
      ex.responseTrailers = headers;
    }
    if (isEnd) {
      ex.responseEndAt = at;
      ex.isResponseDone = true;
      this.maybeEmit(id, ex);
    }
  }

  /** A CONNECT for a WebSocket was accepted: its exchange is the handshake, its DATA from here on the frames. */
  private startWebSocket(id: number, ex: Exchange, isEnd: boolean, at: number): void {
    this.streams.delete(id);
    ex.responseEndAt = at;
    ex.isResponseDone = true;
    if (!ex.isRequestDone) {
      ex.requestEndAt = at;
      ex.isRequestDone = true;
    }
    ex.requestBody = null;
    this.hooks.onExchange(ex);
    const session = this.hooks.openWebSocket!(ex, at);
    if (isEnd) session.onClose(at);
    else this.webSockets.set(id, { session, hasClientEnded: false, hasServerEnded: false });
  }

  private requestDone(id: number, ex: Exchange, at: number): void {
    ex.requestEndAt = at;
    ex.isRequestDone = true;
    this.maybeEmit(id, ex);
  }

  private maybeEmit(id: number, ex: Exchange): void {
    if (!ex.isRequestDone || !ex.isResponseDone) return;
    this.streams.delete(id);
    this.hooks.onExchange(ex);
  }

  private onDataBytes(fromClient: boolean, id: number, chunk: Uint8Array, start: number, end: number, at: number): void {
    const ex = this.streams.get(id);
    if (!ex) {
      this.webSockets.get(id)?.session.onData(fromClient, chunk, at, start, end);
      return;
    }
    if (fromClient) {
      ex.requestBodyWire += end - start;
      ex.requestBody?.add(chunk, start, end);
    } else {
      ex.responseBodyWire += end - start;
      ex.responseBody?.add(chunk, start, end);
    }
  }

  private onDataEnd(fromClient: boolean, id: number, flags: number, at: number): void {
    // DATA inside a header block is a protocol error; stop following the connection.
    if ((fromClient ? this.client : this.server).block) throw new Http2Error("header block interrupted");
    if (!(flags & END_STREAM)) return;
    const ex = this.streams.get(id);
    if (!ex) {
      const ws = this.webSockets.get(id);
      if (!ws) return;
      if (fromClient) ws.hasClientEnded = true;
      else ws.hasServerEnded = true;
      if (ws.hasClientEnded && ws.hasServerEnded) {
        this.webSockets.delete(id);
        ws.session.onClose(at);
      }
      return;
    }
    if (fromClient) this.requestDone(id, ex, at);
    else {
      ex.responseEndAt = at;
      ex.isResponseDone = true;
      this.maybeEmit(id, ex);
    }
  }
}
