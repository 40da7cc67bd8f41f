import { constants, inflateRawSync } from "node:zlib";

/** permessage-deflate as the server's 101 accepted it (RFC 7692 section 7). */
export type DeflateParams = {
  serverNoContextTakeover: boolean;
  clientNoContextTakeover: boolean;
  /** LZ77 window of each direction's compressor, 8..15 (15 when not given). */
  serverMaxWindowBits: number;
  clientMaxWindowBits: number;
};

/** What the 101's Sec-WebSocket-Extensions says: no extension, permessage-deflate, or one this parser cannot follow. */
export type Extensions = { deflate: DeflateParams | null } | { unsupported: string };

/**
 * Reads the server's Sec-WebSocket-Extensions (the extensions in use from here on). Any extension other than
 * permessage-deflate may give the RSV bits and the payload a meaning of its own, so the frames could not be read.
 */
export function negotiatedExtensions(values: readonly string[]): Extensions {
  let deflate: DeflateParams | null = null;
  for (const value of values) {
    for (const offer of value.split(",")) {
      const [name = "", ...params] = offer.split(";").map((part) => part.trim());
      if (name === "") continue;
      if (name.toLowerCase() !== "permessage-deflate" || deflate) return { unsupported: name.slice(0, 64) };
      deflate = { serverNoContextTakeover: false, clientNoContextTakeover: false, serverMaxWindowBits: 15, clientMaxWindowBits: 15 };
      for (const param of params) {
        const eq = param.indexOf("=");
        const key = (eq === -1 ? param : param.slice(0, eq)).trim().toLowerCase();
        const raw =
          eq === -1
            ? ""
            : param
                .slice(eq + 1)
                .trim()
                .replace(/^"(.*)"$/, "$1");
        const bits = Number(raw);
        const isBits = raw !== "" && Number.isInteger(bits) && bits >= 8 && bits <= 15;
        if (key === "server_no_context_takeover") deflate.serverNoContextTakeover = true;
        else if (key === "client_no_context_takeover") deflate.clientNoContextTakeover = true;
        else if (key === "server_max_window_bits" && isBits) deflate.serverMaxWindowBits = bits;
        else if (key === "client_max_window_bits") deflate.clientMaxWindowBits = isBits ? bits : 15;
        else return { unsupported: `permessage-deflate; ${param.slice(0, 64)}` };
      }
    }
  }
  return { deflate };
}

/** The compressed bytes of one message held to inflate it; a larger message stays compressed. */
export const MAX_COMPRESSED_MESSAGE = 1024 * 1024;
/**
 * The most one message may inflate to. Not a ratio, unlike bodies (body.ts): deflate's own ratio stops near 1032:1,
 * and legitimate messages come close to it (a repeated JSON shape sent with context takeover costs a handful of
 * bytes; 100 KB of one character, a hundred), while a direction with context takeover cannot read any later message
 * once one was not inflated. What inflating costs is bounded by the tracer's decoding time instead (websocket.ts).
 */
export const MAX_INFLATED_MESSAGE = 8 * 1024 * 1024;

const tail = new Uint8Array([0, 0, 0xff, 0xff]);
const options = { finishFlush: constants.Z_SYNC_FLUSH, windowBits: 15 } as const;

/**
 * One direction's decompressor. With context takeover the sender's LZ77 window runs across messages, so every
 * compressed message of the direction must pass through here in order, recorded or not; the window is kept as the
 * last 2^bits bytes of what this direction inflated to and handed to zlib as the raw stream's preset dictionary,
 * which is exactly the state the sender's window refers to. (node:zlib has no synchronous stream that keeps its state
 * between calls; an asynchronous one would put a callback per message between the relay's reads and the event.)
 *
 * Once a message cannot be inflated (too large, corrupt, no time left), a direction with context takeover cannot read
 * any later one: `failure` says why, and every later message is reported with it.
 */
export class MessageInflater {
  failure = "";
  private readonly windowSize: number;
  /** The window, at the end of a buffer twice its size so most messages append without moving it. */
  private buf: Uint8Array | null = null;
  private end = 0;

  constructor(
    private readonly hasContextTakeover: boolean,
    windowBits: number,
  ) {
    // zlib compresses raw deflate with 9 when asked for 8: a sender may reach 512 bytes back.
    this.windowSize = 1 << Math.max(9, windowBits);
  }

  /** Whether a message must be inflated even when nobody reads it (its bytes are the window of the next one). */
  get isNeededForNext(): boolean {
    return this.hasContextTakeover && this.failure === "";
  }

  /** The message's output, or why not. `message` is its frames' payloads joined, unmasked. */
  inflate(message: Uint8Array): Uint8Array | string {
    if (this.failure) return this.failure;
    if (message.length > MAX_COMPRESSED_MESSAGE) return this.fail(`compressed message over ${MAX_COMPRESSED_MESSAGE} bytes`);
    const input = new Uint8Array(message.length + 4);
    input.set(message);
    input.set(tail, message.length);
    const maxOutputLength = MAX_INFLATED_MESSAGE;
    const dictionary = this.window();
    let out: Uint8Array;
    try {
      out = inflateRawSync(input, dictionary ? { ...options, maxOutputLength, dictionary } : { ...options, maxOutputLength });
    } catch (error) {
      const code = (error as { code?: string }).code;
      const isTooLarge = code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError;
      return this.fail(isTooLarge ? `inflates to over ${maxOutputLength} bytes` : "not valid deflate data");
    }
    if (this.hasContextTakeover) this.remember(out);
    return out;
  }

  /** Time ran out before a message could be inflated. */
  skip(reason: string): string {
    return this.hasContextTakeover ? this.fail(reason) : reason;
  }

  private fail(reason: string): string {
    if (this.hasContextTakeover) {
      this.failure = `${reason}; later compressed messages this way cannot be read`;
      this.buf = null;
      return this.failure;
    }
    return reason;
  }

  private window(): Uint8Array | null {
    if (!this.buf || this.end === 0) return null;
    return this.buf.subarray(Math.max(0, this.end - this.windowSize), this.end);
  }

  private remember(out: Uint8Array): void {
    const size = this.windowSize;
    if (out.length >= size) {
      this.buf ??= new Uint8Array(2 * size);
      this.buf.set(out.subarray(out.length - size));
      this.end = size;
      return;
    }
    this.buf ??= new Uint8Array(2 * size);
    if (this.end + out.length > this.buf.length) {
      const keep = size - out.length;
      this.buf.copyWithin(0, this.end - keep, this.end);
      this.end = keep;
    }
    this.buf.set(out, this.end);
    this.end += out.length;
  }
}
