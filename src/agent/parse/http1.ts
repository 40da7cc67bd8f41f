/**
 * Incremental HTTP/1.x message parser for one direction of a connection. It is fed copies of the
 * bytes the relay already forwarded, in whatever chunks they arrived, and reports heads, body slices
 * and message ends. Body bytes are never copied here: the handler gets views into the caller's chunk.
 * Anything the parser cannot follow is an error; the caller then treats the connection as opaque.
 */

import { latin1 } from "~/lib/bytes.ts";

export type Http1Kind = "request" | "response";

export type Http1Head = {
  method: string;
  target: string;
  status: number;
  reason: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  versionMinor: number;
  /** Name/value pairs in wire order, names as sent. */
  headers: Array<[string, string]>;
  /** -1 when absent. */
  contentLength: number;
  isChunked: boolean;
  transferEncoding: string;
  contentEncoding: string;
  contentType: string;
  host: string;
  xForwardedFor: string;
  upgrade: string;
  hasConnectionClose: boolean;
  hasConnectionUpgrade: boolean;
  expectsContinue: boolean;
  /** Bytes of the head on the wire, including the blank line. */
  headBytes: number;
};

/** How the response body is framed; the caller decides from the request it answers. */
export type ResponseFraming = "normal" | "bodiless" | "interim" | "tunnel";

export type Http1Handler = {
  /** `startAt` is the time of the chunk holding the message's first byte. */
  onHead(head: Http1Head, startAt: number, at: number): ResponseFraming | undefined;
  onBody(chunk: Uint8Array, start: number, end: number): void;
  onComplete(at: number, trailers: Array<[string, string]> | null): void;
};

enum State {
  Head,
  BodyLength,
  ChunkSize,
  ChunkExt,
  ChunkSizeLf,
  ChunkData,
  ChunkDataCr,
  ChunkDataLf,
  Trailers,
  BodyUntilClose,
  Opaque,
  Error,
}

const CR = 13;
const LF = 10;
const MAX_CHUNK_LINE = 4096;
// 13 hex digits keep chunk sizes below 2^52: exact in a double.
const MAX_CHUNK_HEX_DIGITS = 13;

export class Http1ParseError extends Error {
  override name = "Http1ParseError";
}

export class Http1Parser {
  private state = State.Head;
  private head: Uint8Array;
  private headLen = 0;
  private remaining = 0;
  private chunkDigits = 0;
  private chunkLineLen = 0;
  private startAt = 0;
  private isPaused = false;
  /** Body bytes of the current message as sent (chunk framing excluded). */
  bodyBytes = 0;
  errorMessage = "";

  constructor(
    readonly kind: Http1Kind,
    private readonly handler: Http1Handler,
    private readonly maxHeadBytes = 64 * 1024,
  ) {
    this.head = new Uint8Array(1024);
  }

  get isOpaque(): boolean {
    return this.state === State.Opaque;
  }

  get hasFailed(): boolean {
    return this.state === State.Error;
  }

  /** True between messages: nothing of a next message has been seen. */
  get isIdle(): boolean {
    return this.state === State.Head && this.headLen === 0;
  }

  /** Stops consuming after the current message; `push` returns how far it got. */
  pause(): void {
    this.isPaused = true;
  }

  resume(): void {
    this.isPaused = false;
  }

  /** Switches to opaque mode: the rest of this direction is not HTTP/1 (upgrade, tunnel). */
  becomeOpaque(): void {
    this.state = State.Opaque;
  }

  /**
   * Feeds bytes [start, end) of chunk. Returns the offset where it stopped: end, unless paused or the
   * rest is another protocol (opaque from there on).
   */
  push(chunk: Uint8Array, start: number, end: number, at: number): number {
    let i = start;
    while (i < end) {
      if (this.isPaused) return i;
      switch (this.state) {
        case State.Head:
          i = this.readHead(chunk, i, end, at);
          break;
        case State.BodyLength: {
          const n = Math.min(this.remaining, end - i);
          this.bodyBytes += n;
          this.handler.onBody(chunk, i, i + n);
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.finish(at, null);
          break;
        }
        case State.BodyUntilClose:
          this.bodyBytes += end - i;
          this.handler.onBody(chunk, i, end);
          i = end;
          break;
        case State.ChunkSize:
        case State.ChunkExt:
        case State.ChunkSizeLf:
          i = this.readChunkLine(chunk, i, end);
          break;
        case State.ChunkData: {
          const n = Math.min(this.remaining, end - i);
          this.bodyBytes += n;
          this.handler.onBody(chunk, i, i + n);
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = State.ChunkDataCr;
          break;
        }
        case State.ChunkDataCr: {
          const b = chunk[i]!;
          if (b === CR) {
            this.state = State.ChunkDataLf;
            i++;
          } else if (b === LF) {
            this.state = State.ChunkSize;
            i++;
          } else {
            return this.fail("missing CRLF after chunk data", end);
          }
          break;
        }
        case State.ChunkDataLf:
          if (chunk[i] !== LF) return this.fail("missing LF after chunk data", end);
          this.state = State.ChunkSize;
          i++;
          break;
        case State.Trailers:
          i = this.readTrailers(chunk, i, end, at);
          break;
        case State.Opaque:
          // Where the other protocol starts (after a 101 or a CONNECT answer).
          return i;
        case State.Error:
          return end;
      }
    }
    return i;
  }

  /**
   * The sending side closed. Completes a close-delimited body; returns false when a message was cut
   * off in the middle.
   */
  end(at: number): boolean {
    if (this.state === State.BodyUntilClose) {
      this.finish(at, null);
      this.state = State.Opaque;
      return true;
    }
    return this.state === State.Opaque || this.state === State.Error || (this.state === State.Head && this.headLen === 0);
  }

  private fail(message: string, end: number): number {
    this.state = State.Error;
    this.errorMessage = message;
    return end;
  }

  private finish(at: number, trailers: Array<[string, string]> | null): void {
    this.state = State.Head;
    this.headLen = 0;
    this.handler.onComplete(at, trailers);
  }

  /**
   * Finds the blank line that ends the head. The common case (a whole head inside one read) is parsed
   * straight from the chunk; a head split across reads is gathered in the head buffer first.
   */
  private readHead(chunk: Uint8Array, start: number, end: number, at: number): number {
    let i = start;
    if (this.headLen === 0) {
      // Stray CRLFs between messages are allowed before a request line (RFC 9112 2.2).
      while (i < end && (chunk[i] === CR || chunk[i] === LF)) i++;
      if (i === end) return end;
      this.startAt = at;
      this.bodyBytes = 0;
      const headEnd = findHeadEnd(chunk, i, end);
      if (headEnd !== -1) {
        if (headEnd - i > this.maxHeadBytes) return this.fail("head too large", end);
        return this.onHeadComplete(latin1(chunk, i, headEnd), headEnd - i, headEnd, end, at);
      }
      if (!this.append(chunk, i, end)) return this.fail("head too large", end);
      return end;
    }
    // Continue a head split across reads: the terminator may straddle the boundary.
    const from = Math.max(0, this.headLen - 3);
    const before = this.headLen;
    const take = Math.min(end - i, this.maxHeadBytes - before);
    if (take <= 0 || !this.append(chunk, i, i + take)) return this.fail("head too large", end);
    const headEnd = findHeadEnd(this.head, from, this.headLen);
    if (headEnd === -1) {
      if (take < end - i) return this.fail("head too large", end);
      return i + take;
    }
    const headBytes = headEnd;
    this.headLen = 0;
    return this.onHeadComplete(latin1(this.head, 0, headBytes), headBytes, i + (headBytes - before), end, at);
  }

  private append(chunk: Uint8Array, start: number, end: number): boolean {
    const n = end - start;
    const needed = this.headLen + n;
    if (needed > this.maxHeadBytes) return false;
    if (needed > this.head.length) {
      const next = new Uint8Array(Math.min(this.maxHeadBytes, Math.max(needed, this.head.length * 2)));
      next.set(this.head.subarray(0, this.headLen));
      this.head = next;
    }
    this.head.set(chunk.subarray(start, end), this.headLen);
    this.headLen = needed;
    return true;
  }

  private onHeadComplete(text: string, headBytes: number, i: number, end: number, at: number): number {
    this.headLen = 0;
    const head = this.kind === "request" ? parseRequestHead(text) : parseResponseHead(text);
    if (typeof head === "string") return this.fail(head, end);
    head.headBytes = headBytes;
    const framing = this.handler.onHead(head, this.startAt, at);
    if (this.state === State.Error) return end;
    if (this.state === State.Opaque || framing === "tunnel") {
      this.state = State.Opaque;
      return i;
    }
    if (framing === "interim") {
      // A 1xx response: the real response follows.
      this.state = State.Head;
      return i;
    }
    if (
      this.kind === "response" &&
      (framing === "bodiless" || (head.status >= 100 && head.status < 200) || head.status === 204 || head.status === 304)
    ) {
      this.finish(at, null);
      return i;
    }
    if (head.isChunked) {
      this.state = State.ChunkSize;
      this.remaining = 0;
      this.chunkDigits = 0;
      this.chunkLineLen = 0;
      return i;
    }
    if (head.transferEncoding !== "") {
      // A transfer coding other than chunked last: requests cannot be framed, responses run to close.
      if (this.kind === "request") return this.fail("request with unframed transfer-encoding", end);
      this.state = State.BodyUntilClose;
      return i;
    }
    if (head.contentLength > 0) {
      this.state = State.BodyLength;
      this.remaining = head.contentLength;
      return i;
    }
    if (head.contentLength === 0 || this.kind === "request") {
      this.finish(at, null);
      return i;
    }
    this.state = State.BodyUntilClose;
    return i;
  }

  private readChunkLine(chunk: Uint8Array, start: number, end: number): number {
    let i = start;
    while (i < end) {
      const b = chunk[i]!;
      i++;
      if (++this.chunkLineLen > MAX_CHUNK_LINE) return this.fail("chunk size line too long", end);
      if (this.state === State.ChunkSizeLf) {
        if (b !== LF) return this.fail("bad chunk size line ending", end);
        return this.onChunkLineDone(i);
      }
      if (b === LF) return this.onChunkLineDone(i);
      if (b === CR) {
        this.state = State.ChunkSizeLf;
        continue;
      }
      if (this.state === State.ChunkExt) continue;
      const d = hexValue(b);
      if (d >= 0) {
        if (++this.chunkDigits > MAX_CHUNK_HEX_DIGITS) return this.fail("chunk size too large", end);
        this.remaining = this.remaining * 16 + d;
        continue;
      }
      if (this.chunkDigits > 0 && (b === 59 /* ; */ || b === 32 || b === 9)) {
        this.state = State.ChunkExt;
        continue;
      }
      return this.fail("bad chunk size", end);
    }
    return i;
  }

  private onChunkLineDone(i: number): number {
    if (this.chunkDigits === 0) {
      this.state = State.Error;
      this.errorMessage = "empty chunk size";
      return i;
    }
    this.chunkDigits = 0;
    this.chunkLineLen = 0;
    if (this.remaining === 0) {
      this.state = State.Trailers;
      this.headLen = 0;
      return i;
    }
    this.state = State.ChunkData;
    return i;
  }

  private readTrailers(chunk: Uint8Array, start: number, end: number, at: number): number {
    let i = start;
    while (i < end) {
      const lf = chunk.indexOf(LF, i);
      const stop = lf === -1 || lf >= end ? end : lf + 1;
      if (!this.append(chunk, i, stop)) return this.fail("trailers too large", end);
      i = stop;
      if (stop !== lf + 1) continue;
      // The trailer section ends with an empty line; without trailers that is the first line.
      const n = this.headLen;
      const isEmptyFirstLine = n === 1 || (n === 2 && this.head[0] === CR);
      if (isEmptyFirstLine) {
        this.headLen = 0;
        this.finish(at, null);
        return i;
      }
      if (findHeadEnd(this.head, Math.max(0, this.headLen - 3), this.headLen) === this.headLen) {
        const trailers = parseHeaderLines(latin1(this.head, 0, this.headLen), 0);
        this.headLen = 0;
        this.finish(at, typeof trailers === "string" ? null : trailers);
        return i;
      }
    }
    return i;
  }
}

function hexValue(b: number): number {
  if (b >= 48 && b <= 57) return b - 48;
  if (b >= 97 && b <= 102) return b - 87;
  if (b >= 65 && b <= 70) return b - 55;
  return -1;
}

/**
 * The offset just past the blank line ending a head ("\n\n" or "\n\r\n"), searching [from, end);
 * -1 when not there yet. Uses the native indexOf to jump from line end to line end.
 */
export function findHeadEnd(buf: Uint8Array, from: number, end: number): number {
  let lf = buf.indexOf(LF, from);
  while (lf !== -1 && lf < end) {
    const next = lf + 1;
    if (next < end) {
      const b = buf[next];
      if (b === LF) return next + 1;
      if (b === CR) {
        if (next + 1 >= end) return -1;
        if (buf[next + 1] === LF) return next + 2;
      }
    }
    lf = buf.indexOf(LF, next);
  }
  return -1;
}

/** RFC 9110 token characters. */
const tchar = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  tchar[c.charCodeAt(0)] = 1;
}

export function isToken(s: string, from = 0, to = s.length): boolean {
  if (to <= from) return false;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || tchar[c] !== 1) return false;
  }
  return true;
}

function emptyHead(): Http1Head {
  return {
    method: "",
    target: "",
    status: 0,
    reason: "",
    versionMinor: 1,
    headers: [],
    contentLength: -1,
    isChunked: false,
    transferEncoding: "",
    contentEncoding: "",
    contentType: "",
    host: "",
    xForwardedFor: "",
    upgrade: "",
    hasConnectionClose: false,
    hasConnectionUpgrade: false,
    expectsContinue: false,
    headBytes: 0,
  };
}

function firstLineEnd(text: string): [lineEnd: number, next: number] {
  const lf = text.indexOf("\n");
  const lineEnd = lf > 0 && text.charCodeAt(lf - 1) === CR ? lf - 1 : lf;
  return [lineEnd, lf + 1];
}

function parseVersion(s: string, at: number): number {
  // "HTTP/1.0" or "HTTP/1.1"
  if (!s.startsWith("HTTP/1.", at) || s.length !== at + 8) return -1;
  const minor = s.charCodeAt(at + 7) - 48;
  return minor === 0 || minor === 1 ? minor : -1;
}

export function parseRequestHead(text: string): Http1Head | string {
  const [lineEnd, next] = firstLineEnd(text);
  const line = text.slice(0, lineEnd);
  const sp1 = line.indexOf(" ");
  const sp2 = line.lastIndexOf(" ");
  if (sp1 <= 0 || sp2 <= sp1 + 1) return "bad request line";
  if (!isToken(line, 0, sp1)) return "bad method";
  const versionMinor = parseVersion(line, sp2 + 1);
  if (versionMinor < 0) return "bad HTTP version";
  const head = emptyHead();
  head.method = line.slice(0, sp1);
  head.target = line.slice(sp1 + 1, sp2);
  if (head.target.includes(" ")) return "bad request target";
  head.versionMinor = versionMinor;
  return fillHeaders(head, text, next);
}

export function parseResponseHead(text: string): Http1Head | string {
  const [lineEnd, next] = firstLineEnd(text);
  const line = text.slice(0, lineEnd);
  const versionMinor = parseVersion(line.slice(0, 8), 0);
  if (versionMinor < 0 || line.charCodeAt(8) !== 32) return "bad status line";
  const status = Number(line.slice(9, 12));
  if (!Number.isInteger(status) || status < 100 || status > 999 || (line.length > 12 && line.charCodeAt(12) !== 32)) {
    return "bad status code";
  }
  const head = emptyHead();
  head.status = status;
  head.reason = line.slice(13);
  head.versionMinor = versionMinor;
  return fillHeaders(head, text, next);
}

function parseHeaderLines(text: string, from: number): Array<[string, string]> | string {
  const headers: Array<[string, string]> = [];
  let pos = from;
  while (pos < text.length) {
    let lf = text.indexOf("\n", pos);
    if (lf === -1) lf = text.length;
    const lineEnd = lf > pos && text.charCodeAt(lf - 1) === CR ? lf - 1 : lf;
    if (lineEnd === pos) break;
    const first = text.charCodeAt(pos);
    if (first === 32 || first === 9) {
      // Obsolete line folding: continues the previous value.
      const last = headers[headers.length - 1];
      if (!last) return "folded first header";
      last[1] = `${last[1]} ${text.slice(pos, lineEnd).trim()}`;
    } else {
      const colon = text.indexOf(":", pos);
      if (colon === -1 || colon >= lineEnd || !isToken(text, pos, colon)) return "bad header line";
      headers.push([text.slice(pos, colon), headerValue(text, colon + 1, lineEnd)]);
    }
    pos = lf + 1;
  }
  return headers;
}

/** The value between `from` and `end` without surrounding whitespace; the usual ": value" is one slice, no trim. */
function headerValue(text: string, from: number, end: number): string {
  let start = from;
  if (start < end && text.charCodeAt(start) === 32) start++;
  const first = text.charCodeAt(start);
  const last = text.charCodeAt(end - 1);
  // Printable ASCII at both ends: nothing trim() would remove (it also strips NBSP and other spaces).
  if (start < end && first > 32 && first < 127 && last > 32 && last < 127) return text.slice(start, end);
  return text.slice(start, end).trim();
}

function fillHeaders(head: Http1Head, text: string, from: number): Http1Head | string {
  const headers = parseHeaderLines(text, from);
  if (typeof headers === "string") return headers;
  head.headers = headers;
  for (let h = 0; h < headers.length; h++) {
    const pair = headers[h]!;
    const name = pair[0];
    const value = pair[1];
    switch (framingName(name)) {
      case "content-length": {
        const n = parseContentLength(value);
        if (n < 0 || (head.contentLength >= 0 && head.contentLength !== n)) return "bad content-length";
        head.contentLength = n;
        break;
      }
      case "transfer-encoding": {
        head.transferEncoding = head.transferEncoding ? `${head.transferEncoding}, ${value}` : value;
        break;
      }
      case "content-encoding":
        head.contentEncoding = head.contentEncoding ? `${head.contentEncoding}, ${value}` : value;
        break;
      case "content-type":
        head.contentType = value;
        break;
      case "host":
        head.host = value;
        break;
      case "x-forwarded-for":
        head.xForwardedFor = head.xForwardedFor ? `${head.xForwardedFor}, ${value}` : value;
        break;
      case "upgrade":
        head.upgrade = value;
        break;
      case "connection":
        for (const token of value.toLowerCase().split(",")) {
          const t = token.trim();
          if (t === "close") head.hasConnectionClose = true;
          else if (t === "upgrade") head.hasConnectionUpgrade = true;
        }
        break;
      case "expect":
        if (value.toLowerCase() === "100-continue") head.expectsContinue = true;
        break;
    }
  }
  if (head.transferEncoding) {
    const codings = head.transferEncoding.toLowerCase().split(",");
    head.isChunked = codings[codings.length - 1]!.trim() === "chunked";
  }
  return head;
}

/**
 * The framing-relevant header a name is, or "". The names we care about all differ in length, so one
 * length check and a case-insensitive compare replace lower-casing every name.
 */
const framingNames = [
  "host",
  "expect",
  "upgrade",
  "connection",
  "content-type",
  "content-length",
  "x-forwarded-for",
  "content-encoding",
  "transfer-encoding",
];
const byLength: string[] = [];
for (const n of framingNames) byLength[n.length] = n;

function framingName(name: string): string {
  const candidate = byLength[name.length];
  if (candidate === undefined) return "";
  for (let i = 0; i < candidate.length; i++) {
    const c = name.charCodeAt(i);
    // ASCII letters compare case-insensitively; '-' (45) is unaffected by the 0x20 bit check below.
    if (c !== candidate.charCodeAt(i) && (c | 0x20) !== candidate.charCodeAt(i)) return "";
  }
  return candidate;
}

function parseContentLength(value: string): number {
  // "5" or, from some proxies, "5, 5".
  let result = -1;
  for (const part of value.split(",")) {
    const s = part.trim();
    if (s.length === 0 || s.length > 15) return -1;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) return -1;
    }
    const n = Number(s);
    if (result >= 0 && n !== result) return -1;
    result = n;
  }
  return result;
}
