import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";

/**
 * The kept part of one message body: at most `limit` bytes. A body that arrives in one read is kept as a
 * view of that read (no copy: the relay hands over a fresh buffer per read and never touches it again);
 * otherwise the bytes are copied into one buffer sized from the expected length (or grown by doubling).
 * The true size is counted by the parser, not here.
 */
export class BodySample {
  private buf: Uint8Array | null = null;
  /** `buf` is a view of a read buffer we do not own: appending must copy it first. */
  private isBorrowed = false;
  length = 0;
  isTruncated = false;

  constructor(
    private readonly limit: number,
    private readonly expectedLength: number,
  ) {}

  /**
   * Keeps bytes [start, end) of chunk, within the limit. `isRetainable`: the chunk is never modified after
   * this call, so a view of it may be kept instead of a copy.
   */
  add(chunk: Uint8Array, start: number, end: number, isRetainable = false): void {
    if (end <= start) return;
    const room = this.limit - this.length;
    if (room <= 0) {
      this.isTruncated = true;
      return;
    }
    let n = end - start;
    if (n > room) {
      n = room;
      this.isTruncated = true;
    }
    if (this.length === 0 && isRetainable && n > maxCopied && isWorthAView(chunk, n)) {
      this.buf = chunk.subarray(start, start + n);
      this.isBorrowed = true;
      this.length = n;
      return;
    }
    const needed = this.length + n;
    if (!this.buf || this.isBorrowed || needed > this.buf.length) {
      // Sized for the whole body when its length is known (a 1-byte body takes 1 byte), else room to grow.
      const floor = this.expectedLength >= needed ? 0 : 1024;
      const size = Math.max(needed, this.expectedLength, this.isBorrowed ? 0 : (this.buf?.length ?? 0) * 2, floor);
      const next = new Uint8Array(Math.min(this.limit, size));
      if (this.buf) next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.isBorrowed = false;
    }
    if (n <= 64) {
      const buf = this.buf;
      for (let k = 0; k < n; k++) buf[this.length + k] = chunk[start + k]!;
    } else this.buf.set(chunk.subarray(start, start + n), this.length);
    this.length = needed;
  }

  bytes(): Uint8Array {
    return this.buf ? this.buf.subarray(0, this.length) : new Uint8Array(0);
  }
}

/**
 * Bodies up to this size are copied even from a read that could be viewed: the copy costs no more than the view,
 * keeps no read buffer alive, and spares the engine materialising the read's ArrayBuffer to measure it (profiled:
 * `buffer` was 7 % of a 1-byte exchange).
 */
const maxCopied = 256;

/**
 * A view keeps its whole read buffer alive until the event is published: only worth it when the kept
 * part is most of that buffer (a small body in a large pipelined read is copied instead).
 */
function isWorthAView(chunk: Uint8Array, kept: number): boolean {
  return chunk.buffer.byteLength <= Math.max(2 * kept, 4096);
}

export type DecodedBody = { bytes: Uint8Array; decodedFrom: string };

/**
 * The most a compressed body may expand to, per byte received: text and JSON compress 5-20x, so 64x leaves room for
 * the repetitive while a bomb (gzip reaches about 1000:1, brotli far more) costs the tracer no more than that.
 */
export const MAX_DECODED_RATIO = 64;

/**
 * Undoes gzip, deflate and br (in the reverse order they were applied) for display. Returns null when
 * there is nothing to decode, the coding is unknown or the data is corrupt; `{ notDecoded }` when the result would
 * exceed `maxOutput` or MAX_DECODED_RATIO times the input (a bomb stays encoded, and the decompressor stops there:
 * the work is bounded by the bytes received, not by what they expand to).
 */
export function decodeBody(bytes: Uint8Array, contentEncoding: string, maxOutput: number): DecodedBody | { notDecoded: string } | null {
  if (!contentEncoding || bytes.length === 0) return null;
  const codings = contentEncoding
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length === 0) return null;
  let data: Uint8Array = bytes;
  const byRatio = bytes.length * MAX_DECODED_RATIO;
  const options = { maxOutputLength: Math.max(1, Math.min(maxOutput, byRatio)) };
  try {
    for (let i = codings.length - 1; i >= 0; i--) {
      const coding = codings[i];
      if (coding === "gzip" || coding === "x-gzip") data = gunzipSync(data, options);
      else if (coding === "br") data = brotliDecompressSync(data, options);
      else if (coding === "deflate") data = inflateDeflate(data, options);
      else return null;
    }
  } catch (error) {
    if (!isTooLarge(error)) return null;
    return { notDecoded: byRatio <= maxOutput ? `expands over ${MAX_DECODED_RATIO} times its size` : `decodes to over ${maxOutput} bytes` };
  }
  return { bytes: data, decodedFrom: codings.join(", ") };
}

const isTooLarge = (error: unknown) => (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError;

function inflateDeflate(data: Uint8Array, options: { maxOutputLength: number }): Uint8Array {
  // "deflate" is meant to be zlib-wrapped; some servers send raw deflate.
  try {
    return inflateSync(data, options);
  } catch (error) {
    if (isTooLarge(error)) throw error;
    return inflateRawSync(data, options);
  }
}
