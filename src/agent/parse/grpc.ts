import { gunzipSync } from "node:zlib";
import { MAX_DECODED_RATIO } from "./body.ts";

/**
 * gRPC bodies for display without the schema: length-prefixed messages (compressed flag, gzip) and
 * the protobuf wire format decoded to field numbers, e.g. `{1: "hello", 2: 150, 3: {1: "x"}}`.
 * Bounded: depth, output length and the input sample.
 */
const MAX_DEPTH = 8;
/** The largest decompressed message looked at. */
const MAX_MESSAGE = 1 << 20;

export function isGrpc(contentType: string): boolean {
  return contentType.toLowerCase().startsWith("application/grpc");
}

/**
 * The messages of a gRPC body sample, decoded; "" when it is not one. The work is bounded by the sample, not by what
 * it expands to: all compressed messages together inflate to at most MAX_DECODED_RATIO times the sample (a larger one
 * is described by its size), and decoding stops once `maxChars` of text are written.
 */
export function describeGrpcBody(body: Uint8Array, encoding: string, maxChars = 1000): string {
  const parts: string[] = [];
  const budget = { chars: maxChars, inflate: body.length * MAX_DECODED_RATIO };
  let p = 0;
  while (p + 5 <= body.length && budget.chars > 0) {
    const compressed = body[p]!;
    const size = ((body[p + 1]! << 24) >>> 0) + ((body[p + 2]! << 16) | (body[p + 3]! << 8) | body[p + 4]!);
    p += 5;
    const isCut = p + size > body.length;
    let message = body.subarray(p, Math.min(body.length, p + size));
    p += size;
    if (compressed === 1) {
      if (encoding !== "gzip" || isCut) {
        parts.push(`<${size} bytes, ${encoding || "compressed"}>`);
        budget.chars -= 20;
        continue;
      }
      try {
        message = gunzipSync(message, { maxOutputLength: Math.max(1, Math.min(MAX_MESSAGE, budget.inflate)) });
        budget.inflate -= message.length;
      } catch (error) {
        parts.push(`<${size} bytes, ${(error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" ? "expands too far" : "undecodable"}>`);
        budget.chars -= 20;
        continue;
      }
    } else if (compressed !== 0) {
      return "";
    }
    const text = decodeMessage(message, 0, budget) ?? `<${message.length} bytes>`;
    parts.push(isCut ? `${text}…` : text);
    budget.chars -= text.length;
  }
  const out = parts.join(" ");
  return out.length > maxChars ? `${out.slice(0, maxChars - 1)}…` : out;
}

type Budget = { chars: number };

/**
 * One protobuf message as `{field: value, ...}`; null when the bytes are not a well-formed message. Once the budget's
 * characters are spent the rest of the message is not decoded (`…`).
 */
function decodeMessage(buf: Uint8Array, depth: number, budget: Budget): string | null {
  if (depth > MAX_DEPTH) return null;
  const fields: string[] = [];
  let left = budget.chars;
  const add = (text: string) => {
    fields.push(text);
    left -= text.length + 2;
  };
  let p = 0;
  const varint = (): number | null => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (p >= buf.length) return null;
      const b = buf[p++]!;
      value += (b & 0x7f) * scale;
      scale *= 128;
      if ((b & 0x80) === 0) return value;
    }
    return null;
  };
  while (p < buf.length) {
    if (left <= 0) {
      fields.push("…");
      break;
    }
    const key = varint();
    if (key === null) return null;
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (field === 0) return null;
    if (wire === 0) {
      const v = varint();
      if (v === null) return null;
      add(`${field}: ${v}`);
    } else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      if (p + n > buf.length) return null;
      const view = new DataView(buf.buffer, buf.byteOffset + p, n);
      add(`${field}: ${wire === 1 ? view.getFloat64(0, true) : view.getUint32(0, true)}`);
      p += n;
    } else if (wire === 2) {
      const len = varint();
      if (len === null || p + len > buf.length) return null;
      add(`${field}: ${describeBytes(buf.subarray(p, p + len), depth, { chars: left })}`);
      p += len;
    } else {
      return null;
    }
  }
  return `{${fields.join(", ")}}`;
}

/** A length-delimited field: a nested message, a string, or bytes. */
function describeBytes(bytes: Uint8Array, depth: number, budget: Budget): string {
  if (bytes.length === 0) return '""';
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: printable text test
    if (!/[\x00-\x08\x0e-\x1f]/.test(text)) {
      // Printable text that also parses as a message is more likely text ("hello" parses as a message).
      return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
    }
  } catch {
    // Not UTF-8.
  }
  const nested = decodeMessage(bytes, depth + 1, budget);
  if (nested !== null) return nested;
  const hex = Buffer.from(bytes.subarray(0, 32)).toString("hex");
  return `0x${hex}${bytes.length > 32 ? "…" : ""}`;
}
