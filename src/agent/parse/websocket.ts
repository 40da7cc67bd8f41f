import { errorMessage } from "~/lib/errors.ts";
import { type RateLimit, TokenBucket } from "~/lib/rate-limit.ts";
import { type DeflateParams, MAX_COMPRESSED_MESSAGE, MessageInflater } from "./websocket-deflate.ts";

/**
 * WebSocket frames (RFC 6455) of both directions of one upgraded connection, or of one HTTP/2 stream opened by an
 * extended CONNECT (RFC 8441), turned into messages: masking undone, fragments joined, control frames (which may come
 * between the fragments of a message) on their own, permessage-deflate (RFC 7692) inflated per direction.
 *
 * Memory is bounded whatever a peer sends: a frame's length is only counted down (a 2^62-byte frame costs what a
 * short one does), a message keeps at most the payload limit, a compressed one at most MAX_COMPRESSED_MESSAGE bytes
 * to inflate, and what it inflates to is bounded by websocket-deflate.ts. A per-connection budget decides which
 * messages become events; the rest are parsed all the same (and inflated, when later ones depend on them) and counted.
 */
export const Opcode = { Continuation: 0, Text: 1, Binary: 2, Close: 8, Ping: 9, Pong: 10 } as const;

export type WsMessage = {
  /** Who sent it; null for the close made up when the connection ended without one. */
  fromClient: boolean | null;
  opcode: number;
  /** When its first and its last frame were read (the relay's clock, microseconds). */
  startAt: number;
  endAt: number;
  /** Bytes of its frames on the wire, headers included. */
  wireBytes: number;
  /** Its size: inflated when it was compressed; -1 when it was compressed and could not be inflated. */
  size: number;
  isCompressed: boolean;
  /** The kept part: unmasked, inflated, at most the payload limit. */
  payload: Uint8Array;
  isTruncated: boolean;
  /** Why a compressed message's payload is not there ("" when it is). */
  notInflated: string;
};

/** What the connection carried, on its last event. */
export type WsTotals = {
  clientMessages: number;
  serverMessages: number;
  /** Frame bytes each way since the upgrade. */
  clientBytes: number;
  serverBytes: number;
  /** Messages the budget left out. */
  dropped: number;
  /** When the connection became a WebSocket. */
  openedAt: number;
  /** Why the frames stopped being followed, or how the connection ended without a close ("" when it closed cleanly). */
  ending: string;
};

export type WebSocketHooks = {
  /** A message to record; the connection's last one (a close, or one made up) comes with the totals. */
  onMessage(message: WsMessage, totals?: WsTotals): void;
};

export type WebSocketOptions = {
  payloadLimit: number;
  /** permessage-deflate as negotiated; null when the messages are not compressed. */
  deflate: DeflateParams | null;
  /** Messages recorded per second on this connection and at once; closes always are. */
  budget: RateLimit;
  /** Milliseconds of decompression the tracer may spend, shared with body decoding. */
  decodeBudget: TokenBucket;
  openedAt: number;
};

/** The most of one payload any event keeps, whatever the payload limit: the server keeps no more (1 MiB bodies). */
export const MAX_KEPT_PAYLOAD = 1024 * 1024;

const noBytes = new Uint8Array(0);
const isLittleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

class FrameError extends Error {}

/** A data message being read. */
type Building = {
  opcode: number;
  startAt: number;
  wireBytes: number;
  payloadBytes: number;
  isCompressed: boolean;
  isRecorded: boolean;
  /** Uncompressed and recorded: the kept bytes. Compressed: the compressed bytes, while they are to be inflated. */
  buf: Uint8Array | null;
  length: number;
  /** A compressed message past MAX_COMPRESSED_MESSAGE: its bytes were let go. */
  isTooBig: boolean;
};

/** Frames of one direction. */
class FrameReader {
  private readonly head = new Uint8Array(14);
  private headLength = 0;
  private headNeeded = 2;
  private isInPayload = false;
  private opcode = 0;
  private isFin = false;
  private readonly mask = new Uint8Array(4);
  private isMasked = false;
  private length = 0;
  private read = 0;
  private frameStartAt = 0;
  private message: Building | null = null;
  /** The control frame being read (at most 125 bytes) and whether it is recorded. */
  private readonly control = new Uint8Array(125);
  private isControlRecorded = false;
  private controlWire = 0;
  /** This side sent its close: anything after it is not part of the conversation. */
  private isClosed = false;
  private readonly inflater: MessageInflater | null;

  constructor(
    readonly isClient: boolean,
    private readonly session: WebSocketSession,
    private readonly keepLimit: number,
    deflate: DeflateParams | null,
  ) {
    this.inflater = deflate
      ? isClient
        ? new MessageInflater(!deflate.clientNoContextTakeover, deflate.clientMaxWindowBits)
        : new MessageInflater(!deflate.serverNoContextTakeover, deflate.serverMaxWindowBits)
      : null;
  }

  /** Whether a message was begun and not finished. */
  get isInMessage(): boolean {
    return this.message !== null || this.isInPayload || this.headLength > 0;
  }

  push(chunk: Uint8Array, start: number, end: number, at: number): void {
    if (this.isClosed) return;
    let i = start;
    while (i < end) {
      if (!this.isInPayload) {
        const head = this.head;
        while (this.headLength < this.headNeeded && i < end) {
          head[this.headLength++] = chunk[i++]!;
          if (this.headLength === 2) {
            const len7 = head[1]! & 0x7f;
            this.headNeeded = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (head[1]! & 0x80 ? 4 : 0);
            this.frameStartAt = at;
          }
        }
        if (this.headLength < this.headNeeded) return;
        this.startFrame();
        if (this.length === 0) this.finishFrame(at);
        if (this.isClosed) return;
        continue;
      }
      const n = Math.min(this.length - this.read, end - i);
      this.payload(chunk, i, i + n);
      this.read += n;
      i += n;
      if (this.read === this.length) {
        this.finishFrame(at);
        if (this.isClosed) return;
      }
    }
  }

  private startFrame(): void {
    const head = this.head;
    const b0 = head[0]!;
    const b1 = head[1]!;
    const opcode = b0 & 0x0f;
    const isRsv1 = (b0 & 0x40) !== 0;
    let p = 2;
    let length = b1 & 0x7f;
    if (length === 126) {
      length = (head[2]! << 8) | head[3]!;
      p = 4;
    } else if (length === 127) {
      const high = ((head[2]! << 24) | (head[3]! << 16) | (head[4]! << 8) | head[5]!) >>> 0;
      const low = ((head[6]! << 24) | (head[7]! << 16) | (head[8]! << 8) | head[9]!) >>> 0;
      if (high >= 0x80000000) throw new FrameError("a 64-bit frame length with its top bit set");
      // Past 2^53 this is not exact; nothing that long is ever read to its end.
      length = high * 2 ** 32 + low;
      p = 10;
    }
    this.isMasked = (b1 & 0x80) !== 0;
    if (this.isMasked) this.mask.set(head.subarray(p, p + 4));
    this.isFin = (b0 & 0x80) !== 0;
    this.opcode = opcode;
    this.length = length;
    this.read = 0;
    this.headLength = 0;
    this.headNeeded = 2;
    this.isInPayload = true;
    const headBytes = p + (this.isMasked ? 4 : 0);
    if (b0 & 0x30) throw new FrameError("RSV2 or RSV3 set without an extension that uses them");
    if (opcode >= 8) {
      if (opcode > Opcode.Pong) throw new FrameError(`reserved opcode ${opcode}`);
      if (!this.isFin) throw new FrameError("a fragmented control frame");
      if (length > 125) throw new FrameError("a control frame over 125 bytes");
      if (isRsv1) throw new FrameError("RSV1 on a control frame");
      this.controlWire = headBytes + length;
      this.isControlRecorded = opcode === Opcode.Close || this.session.admit(this.frameStartAt);
      return;
    }
    if (opcode > Opcode.Binary) throw new FrameError(`reserved opcode ${opcode}`);
    const message = this.message;
    if (opcode === Opcode.Continuation) {
      if (!message) throw new FrameError("a continuation frame outside a message");
      if (isRsv1) throw new FrameError("RSV1 on a continuation frame");
      message.wireBytes += headBytes + length;
      if (message.buf) this.reserve(message, length);
      return;
    }
    if (message) throw new FrameError("a new message before the last one ended");
    if (isRsv1 && !this.inflater) throw new FrameError("a compressed frame without permessage-deflate");
    const isRecorded = this.session.admit(this.frameStartAt);
    const isCompressed = isRsv1;
    const isKept = isCompressed ? isRecorded || this.inflater!.isNeededForNext : isRecorded && this.keepLimit > 0;
    const started: Building = {
      opcode,
      startAt: this.frameStartAt,
      wireBytes: headBytes + length,
      payloadBytes: 0,
      isCompressed,
      isRecorded,
      buf: null,
      length: 0,
      isTooBig: false,
    };
    this.message = started;
    if (isKept) this.reserve(started, length);
  }

  /** Room in the message's buffer for a frame of `frameLength` more bytes, within its bound. */
  private reserve(message: Building, frameLength: number): void {
    const bound = message.isCompressed ? MAX_COMPRESSED_MESSAGE : this.keepLimit;
    const wanted = Math.min(bound, message.length + frameLength);
    const buf = message.buf;
    if (buf && wanted <= buf.length) return;
    // The whole message when this frame ends it, else room to grow.
    const size = Math.min(bound, Math.max(wanted, this.isFin ? 0 : 1024, buf ? buf.length * 2 : 0));
    if (size === 0) return;
    const next = new Uint8Array(size);
    if (buf) next.set(buf.subarray(0, message.length));
    message.buf = next;
  }

  private payload(chunk: Uint8Array, start: number, end: number): void {
    if (this.opcode >= 8) {
      if (this.isControlRecorded) this.copy(chunk, start, end, this.control, this.read);
      return;
    }
    const message = this.message!;
    message.payloadBytes += end - start;
    const buf = message.buf;
    if (!buf) return;
    // Each frame reserved room for itself up to the bound (reserve): what does not fit is past the bound.
    const n = Math.min(buf.length - message.length, end - start);
    if (n > 0) {
      this.copy(chunk, start, start + n, buf, message.length);
      message.length += n;
    }
    if (n < end - start && message.isCompressed) {
      message.buf = null;
      message.isTooBig = true;
    }
  }

  /** chunk[start, end) into dst at `at`, unmasked (the mask runs from this frame's payload offset this.read). */
  private copy(chunk: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): void {
    const n = end - start;
    if (n <= 32) {
      if (this.isMasked) {
        const mask = this.mask;
        const phase = this.read;
        for (let k = 0; k < n; k++) dst[at + k] = chunk[start + k]! ^ mask[(phase + k) & 3]!;
      } else for (let k = 0; k < n; k++) dst[at + k] = chunk[start + k]!;
      return;
    }
    dst.set(chunk.subarray(start, end), at);
    if (this.isMasked) unmask(dst, at, at + n, this.mask, this.read);
  }

  private finishFrame(at: number): void {
    this.isInPayload = false;
    const opcode = this.opcode;
    if (opcode >= 8) {
      const length = this.length;
      const message: WsMessage = {
        fromClient: this.isClient,
        opcode,
        startAt: this.frameStartAt,
        endAt: at,
        wireBytes: this.controlWire,
        size: length,
        isCompressed: false,
        payload: this.isControlRecorded && length > 0 ? this.control.slice(0, length) : noBytes,
        isTruncated: false,
        notInflated: "",
      };
      if (opcode === Opcode.Close) {
        this.isClosed = true;
        this.message = null;
      }
      this.session.onMessage(this.isClient, message, this.isControlRecorded);
      return;
    }
    if (this.isFin) this.finishMessage(at);
  }

  private finishMessage(at: number): void {
    const b = this.message!;
    this.message = null;
    let payload = b.buf ? b.buf.subarray(0, b.length) : noBytes;
    let size = b.payloadBytes;
    let isTruncated = b.payloadBytes > payload.length;
    let notInflated = "";
    if (b.isCompressed) {
      const inflater = this.inflater!;
      payload = noBytes;
      isTruncated = false;
      size = -1;
      if (b.isTooBig) notInflated = inflater.skip(`compressed message over ${MAX_COMPRESSED_MESSAGE} bytes`);
      else if (b.buf || b.payloadBytes === 0) {
        const out = this.session.inflate(inflater, b.buf ? b.buf.subarray(0, b.length) : noBytes);
        if (typeof out === "string") notInflated = out;
        else {
          size = out.length;
          isTruncated = out.length > this.keepLimit;
          // A view would keep the whole output alive until the event is published: only worth it for most of it.
          payload = !isTruncated ? out : this.keepLimit * 2 >= out.length ? out.subarray(0, this.keepLimit) : out.slice(0, this.keepLimit);
        }
      }
      if (!b.isRecorded) payload = noBytes;
    }
    const message: WsMessage = {
      fromClient: this.isClient,
      opcode: b.opcode,
      startAt: b.startAt,
      endAt: at,
      wireBytes: b.wireBytes,
      size,
      isCompressed: b.isCompressed,
      payload,
      isTruncated,
      notInflated,
    };
    this.session.onMessage(this.isClient, message, b.isRecorded);
  }
}

/** dst[from, to) XOR the mask, which starts at byte `phase` of the key at `from`; four bytes at a time where aligned. */
function unmask(dst: Uint8Array, from: number, to: number, mask: Uint8Array, phase: number): void {
  let j = from;
  const offset = dst.byteOffset;
  while (j < to && ((offset + j) & 3) !== 0) {
    dst[j] = dst[j]! ^ mask[(phase + j - from) & 3]!;
    j++;
  }
  const words = (to - j) >>> 2;
  if (words > 0 && isLittleEndian) {
    const k = (phase + j - from) & 3;
    const word = mask[k]! | (mask[(k + 1) & 3]! << 8) | (mask[(k + 2) & 3]! << 16) | (mask[(k + 3) & 3]! << 24);
    const view = new Int32Array(dst.buffer, offset + j, words);
    for (let w = 0; w < words; w++) view[w]! ^= word;
    j += words * 4;
  }
  while (j < to) {
    dst[j] = dst[j]! ^ mask[(phase + j - from) & 3]!;
    j++;
  }
}

/**
 * One WebSocket: its two directions, the message budget, and the totals its last event carries. `state` reads as
 * the HTTP sessions' does ("http": still followed) so the connection treats all its sessions alike. A frame that
 * breaks RFC 6455 (or an extension it cannot follow) stops the parsing, never the bytes: the peer will most likely
 * fail the connection too, and the last event says why.
 */
export class WebSocketSession {
  state: "http" | "failed" = "http";
  failReason = "";
  private readonly client: FrameReader;
  private readonly server: FrameReader;
  private readonly budget: TokenBucket;
  private readonly totals: WsTotals;
  /** The last close seen: it carries the totals once the connection ends. */
  private heldClose: WsMessage | null = null;
  private isEnded = false;

  constructor(
    private readonly hooks: WebSocketHooks,
    private readonly options: WebSocketOptions,
  ) {
    const keep = Math.min(Math.max(0, options.payloadLimit), MAX_KEPT_PAYLOAD);
    this.client = new FrameReader(true, this, keep, options.deflate);
    this.server = new FrameReader(false, this, keep, options.deflate);
    this.budget = new TokenBucket(options.budget, options.openedAt / 1000);
    this.totals = {
      clientMessages: 0,
      serverMessages: 0,
      clientBytes: 0,
      serverBytes: 0,
      dropped: 0,
      openedAt: options.openedAt,
      ending: "",
    };
  }

  /** Frames begun now are this connection's to record, or counted as dropped. */
  admit(at: number): boolean {
    return this.budget.take(1, at / 1000) === 1;
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number, start = 0, end = chunk.length): void {
    if (fromClient) this.totals.clientBytes += end - start;
    else this.totals.serverBytes += end - start;
    if (this.state !== "http" || end <= start) return;
    try {
      (fromClient ? this.client : this.server).push(chunk, start, end, at);
    } catch (error) {
      this.fail(
        `${fromClient ? "client" : "server"}: ${error instanceof FrameError ? error.message : `tap error: ${errorMessage(error)}`}`,
      );
    }
  }

  onEnd(_fromClient: boolean, _at: number): void {}

  /** The connection (or the HTTP/2 stream) is gone: the last event goes with the totals. */
  onClose(at: number, error?: string): void {
    if (this.isEnded) return;
    this.isEnded = true;
    const totals = this.totals;
    if (this.state === "failed") totals.ending = `frames not followed after ${this.failReason}`;
    else if (error) totals.ending = `connection closed: ${error}`;
    else if (this.client.isInMessage || this.server.isInMessage) totals.ending = "connection closed in the middle of a message";
    const last = this.heldClose ?? {
      fromClient: null,
      opcode: Opcode.Close,
      startAt: at,
      endAt: at,
      wireBytes: 0,
      size: 0,
      isCompressed: false,
      // 1006: closed without a close frame (RFC 6455 7.4.1), a code never sent on the wire.
      payload: new Uint8Array([0x03, 0xee]),
      isTruncated: false,
      notInflated: "",
    };
    if (!this.heldClose && !totals.ending) totals.ending = "connection closed without a close frame";
    this.heldClose = null;
    this.hooks.onMessage(last, totals);
  }

  /** From a reader: a whole message; `isRecorded` when the budget let it through. */
  onMessage(fromClient: boolean, message: WsMessage, isRecorded: boolean): void {
    if (fromClient) this.totals.clientMessages++;
    else this.totals.serverMessages++;
    if (message.opcode === Opcode.Close) {
      const held = this.heldClose;
      this.heldClose = message;
      if (held) this.hooks.onMessage(held);
      return;
    }
    if (isRecorded) this.hooks.onMessage(message);
    else this.totals.dropped++;
  }

  /** Inflates within the tracer's decoding time, charging what it took. */
  inflate(inflater: MessageInflater, compressed: Uint8Array): Uint8Array | string {
    const budget = this.options.decodeBudget;
    const started = performance.now();
    if (budget.available(started) <= 0) return inflater.skip("the tracer's time for decoding is spent for now");
    try {
      return inflater.inflate(compressed);
    } finally {
      budget.spend(performance.now() - started);
    }
  }

  private fail(reason: string): void {
    this.state = "failed";
    this.failReason = reason.slice(0, 200);
  }
}
