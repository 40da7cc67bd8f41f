import { isUtf8 } from "node:buffer";
import { brotliDecompressSync, constants, gunzipSync, inflateRawSync, inflateSync, zstdDecompressSync } from "node:zlib";
import { utf8 } from "~/lib/bytes.ts";
import { binaryForm, headerForm, headerLineValue, isBinaryForm, jsonText, textForm } from "~/lib/filter/content.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { FrameBody } from "~/lib/protocol/validate-event-batch.ts";
import { TokenBucket } from "~/lib/rate-limit.ts";
import { canStoreOnce, hasUtf8Bom, recordHeaderLines, recordSameBody } from "./stored-body.ts";

/**
 * The search fields of an event (`search_*`, ADR 0032), made once when the server accepts it: whatever a publisher sent
 * in them is replaced. Bodies become the text a person reads: a content encoding the agent left in place (a body cut at
 * capture, zstd, the agent's decoding time spent) is undone here within a hard bound, the charset is decoded, JSON's
 * `\u` escapes are read; a body that is not text becomes its bytes (content.ts, binaryForm). Headers become
 * `name: value` lines. The work per event is bounded by the kept body (at most 1 MiB) and, for decoding, by the
 * output bound and a shared time allowance.
 */

/** The most a body decodes to for search: what the publish limit keeps of a body. */
export const maxDecodedBodyBytes = 1024 * 1024;

/** The most a body may expand to per byte received when decoded here (as the agent's bound). */
const maxDecodedRatio = 64;

/** Time the server may spend decoding bodies, all events together: a tenth of a core, 200 ms at once. */
export const searchDecodeBudget = { ratePerSecond: 100, burst: 200 } as const;

/** What a body that stayed encoded is told by (the event's tags `req_body_search` / `resp_body_search`). */
type NotDecoded = { reason: string };

/**
 * Makes the search fields. One per server (ingest) and per worker (its inserts): the decoding allowance is shared by
 * every event it makes fields for.
 */
/** The columns SearchTexts fills: only filters read them; whole events are read without them (SqlStore.getEvents). */
export const searchColumns: ReadonlySet<string> = new Set([
  "search_req_body",
  "search_resp_body",
  "search_req_headers",
  "search_resp_headers",
]);

/** The search fields left empty, whatever a publisher sent in them (what an event stored before content search holds). */
export function clearSearchTexts(e: TracedEvent): void {
  e.search_req_headers = "";
  e.search_resp_headers = "";
  e.search_req_body = "";
  e.search_resp_body = "";
}

export class SearchTexts {
  private readonly budget: TokenBucket;

  constructor(
    private readonly now: () => number = () => performance.now(),
    budget: { ratePerSecond: number; burst: number } = searchDecodeBudget,
  ) {
    this.budget = new TokenBucket(budget, now());
  }

  /**
   * Sets the event's search fields from its headers and bodies (in place). Never throws, whatever the fields hold.
   * `req` / `resp`: the bodies as the publish frame carried them (validate-event-batch.ts), taken for a body only while
   * the event still holds the base64 they were given as, so the body is not decoded from its base64 again.
   */
  fill(e: TracedEvent, req?: FrameBody, resp?: FrameBody): void {
    e.search_req_headers = headerLines(e, "req", e.http_req_headers);
    e.search_resp_headers = headerLines(e, "resp", e.http_resp_headers);
    e.search_req_body = this.bodyForm(e, "req", req);
    e.search_resp_body = this.bodyForm(e, "resp", resp);
  }

  /** The side's search text; when it is exactly the stored bytes as UTF-8, the store writes the body once (stored-body.ts). */
  private bodyForm(e: TracedEvent, side: "req" | "resp", frame: FrameBody | undefined): string {
    const base64 = side === "req" ? e.http_req_body : e.http_resp_body;
    if (typeof base64 !== "string" || base64 === "") return "";
    const stored = frame?.bytes !== undefined && frame.value === base64 ? frame.bytes : Buffer.from(base64, "base64");
    formState.isStoredBytes = false;
    const form = this.formOf(e, side, stored);
    // Decoded as UTF-8 from all of the stored bytes and kept as it was read, the form is the bytes by construction;
    // any other text form (another charset, a decoded content encoding) is compared with them.
    const isSame = formState.isStoredBytes || (form !== "" && !isBinaryForm(form) && canStoreOnce(form, stored));
    if (isSame) recordSameBody(e, side, base64, form);
    return form;
  }

  private formOf(e: TracedEvent, side: "req" | "resp", stored: Uint8Array): string {
    let bytes: Uint8Array = stored;
    if (bytes.length === 0) return "";
    const tags = typeof e.tags === "object" && e.tags !== null ? e.tags : null;
    const encoding = side === "req" ? e.http_req_content_encoding : e.http_resp_content_encoding;
    const codings = codingsOf(encoding);
    const isCut = (side === "req" ? e.http_req_body_truncated : e.http_resp_body_truncated) === true;
    if (codings.length > 0 && !tags?.[`${side}_body_decoded`]) {
      const decoded = this.decode(bytes, codings);
      if (!(decoded instanceof Uint8Array)) {
        if (tags) tags[`${side}_body_search`] = `searched by its bytes: ${decoded.reason}`;
        // Still encoded: whatever its type says, these bytes are not its text.
        return binaryForm(bytes);
      }
      bytes = decoded;
    }
    const form = bodyForm(bytes, side === "req" ? e.http_req_content_type : e.http_resp_content_type, isCut || codings.length > 0);
    if (bytes !== stored) formState.isStoredBytes = false;
    return form;
  }

  private decode(bytes: Uint8Array, codings: readonly string[]): Uint8Array | NotDecoded {
    const started = this.now();
    if (this.budget.available(started) <= 0) return { reason: "the server's time for decoding bodies was spent" };
    try {
      return decodeForSearch(bytes, codings);
    } finally {
      this.budget.spend(this.now() - started);
    }
  }
}

/**
 * Header names seen lately that their lines keep as they are: lower case, no line break, no ": ". A server sees the
 * same few again and again. Bounded: cleared when full.
 */
const plainNames = new Set<string>();
const maxPlainNames = 1024;
const maxPlainNameChars = 128;

/**
 * A side's header lines (content.ts, headerForm), made in one pass that also finds whether they give the list back
 * exactly (stored-body.ts, isHeaderLines), recorded for the store.
 */
function headerLines(e: TracedEvent, side: "req" | "resp", headers: unknown): string {
  if (!Array.isArray(headers)) return "";
  if (headers.length === 0) {
    recordHeaderLines(e, side, headers, "", false);
    return "";
  }
  // Joined once from an array: concatenating would make a rope node per piece for the collector to trace and flatten.
  const parts = new Array<string>(4 * headers.length + 1);
  let isLines = true;
  for (let k = 0; k < headers.length; k++) {
    const header: unknown = headers[k];
    if (!Array.isArray(header) || header.length !== 2) return headerForm(headers);
    const [name, value] = header as unknown[];
    if (typeof name !== "string" || typeof value !== "string") return headerForm(headers);
    let lower = name;
    if (!plainNames.has(name)) {
      lower = name.toLowerCase();
      if (lower !== name || name.includes("\n") || name.includes(": ")) isLines = false;
      else if (name.length <= maxPlainNameChars) {
        if (plainNames.size >= maxPlainNames) plainNames.clear();
        plainNames.add(name);
      }
    }
    const line = value.includes("\n") || value.includes("\r") ? headerLineValue(value) : value;
    if (line !== value) isLines = false;
    parts[4 * k] = "\n";
    parts[4 * k + 1] = lower;
    parts[4 * k + 2] = ": ";
    parts[4 * k + 3] = line;
  }
  parts[4 * headers.length] = "\n";
  const lines = parts.join("");
  recordHeaderLines(e, side, headers, lines, isLines && lines.isWellFormed());
  return lines;
}

function codingsOf(contentEncoding: unknown): string[] {
  if (typeof contentEncoding !== "string" || contentEncoding === "") return [];
  return contentEncoding
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity");
}

const isTooLarge = (error: unknown) => (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError;

/**
 * Undoes the codings (applied left to right, undone right to left) within maxDecodedBodyBytes and maxDecodedRatio. A
 * stream cut at capture is decoded as far as it goes (gzip and deflate; br and zstd give nothing until their end). A
 * bomb stops the decompressor at the bound: it costs what decoding the bound costs, not what it would expand to.
 */
export function decodeForSearch(bytes: Uint8Array, codings: readonly string[]): Uint8Array | NotDecoded {
  const limit = Math.max(1, Math.min(maxDecodedBodyBytes, bytes.length * maxDecodedRatio));
  let data = bytes;
  try {
    for (let i = codings.length - 1; i >= 0; i--) {
      const coding = codings[i];
      const zlibOptions = { maxOutputLength: limit, finishFlush: constants.Z_SYNC_FLUSH };
      if (coding === "gzip" || coding === "x-gzip") data = gunzipSync(data, zlibOptions);
      else if (coding === "deflate") data = inflateDeflate(data, zlibOptions);
      else if (coding === "br") data = brotliDecompressSync(data, { maxOutputLength: limit });
      else if (coding === "zstd") data = zstdDecompressSync(data, { maxOutputLength: limit });
      else return { reason: `${coding} is not decoded` };
      if (data.length === 0) return { reason: `its ${coding} stream ends before any of it could be decoded` };
    }
  } catch (error) {
    if (!isTooLarge(error)) return { reason: `its ${codings.join(", ")} could not be decoded` };
    return {
      reason: limit < maxDecodedBodyBytes ? `it expands over ${maxDecodedRatio} times its size` : `it decodes to over ${limit} bytes`,
    };
  }
  return data;
}

function inflateDeflate(data: Uint8Array, options: { maxOutputLength: number; finishFlush: number }): Uint8Array {
  // "deflate" is meant to be zlib-wrapped; some servers send raw deflate.
  try {
    return inflateSync(data, options);
  } catch (error) {
    if (isTooLarge(error)) throw error;
    return inflateRawSync(data, options);
  }
}

function mediaTypeOf(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

function charsetOf(contentType: string): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  return m?.[1] ? m[1].toLowerCase() : null;
}

const isJsonType = (type: string) =>
  type === "application/json" || type.endsWith("+json") || type === "application/x-ndjson" || type === "text/json";

/** Types whose bodies are text whatever bytes they hold (decoded with their charset, UTF-8 or Windows-1252 without one). */
function isTextType(type: string): boolean {
  return (
    type.startsWith("text/") ||
    isJsonType(type) ||
    type.endsWith("+xml") ||
    type === "application/xml" ||
    type === "application/javascript" ||
    type === "application/ecmascript" ||
    type === "application/x-www-form-urlencoded" ||
    type === "application/graphql" ||
    type === "application/yaml" ||
    type === "application/x-yaml" ||
    type === "application/sql"
  );
}

type BodyType = { readonly charset: string | null; readonly isText: boolean; readonly isJson: boolean };

/** Content-Types seen lately, read once each: a server sees the same few again and again. Bounded: cleared when full. */
const bodyTypes = new Map<string, BodyType>();
const maxBodyTypes = 512;
const maxCachedTypeChars = 256;

function typeOf(contentType: string): BodyType {
  let type = bodyTypes.get(contentType);
  if (type) return type;
  const media = mediaTypeOf(contentType);
  type = { charset: charsetOf(contentType), isText: isTextType(media), isJson: isJsonType(media) };
  if (contentType.length <= maxCachedTypeChars) {
    if (bodyTypes.size >= maxBodyTypes) bodyTypes.clear();
    bodyTypes.set(contentType, type);
  }
  return type;
}

/** Characters a text has only if it is not text: C0 controls other than tab, line breaks and form feed; DEL. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: telling binary from text is the point
const controlCharacters = /[\x00-\x08\x0b\x0e-\x1f\x7f]/;

/**
 * How many of the bytes are UTF-8: all of them, or when `isCut` all but a character cut at the end (a body cut at
 * capture); -1 when they are not UTF-8.
 */
function utf8Length(bytes: Uint8Array, isCut: boolean): number {
  if (isUtf8(bytes)) return bytes.length;
  if (!isCut) return -1;
  for (let back = 1; back <= 3 && back < bytes.length; back++) {
    const b = bytes[bytes.length - back] as number;
    if ((b & 0xc0) === 0xc0) return isUtf8(bytes.subarray(0, bytes.length - back)) ? bytes.length - back : -1;
    if ((b & 0xc0) !== 0x80) return -1;
  }
  return -1;
}

function decodeCharset(bytes: Uint8Array, charset: string): string | null {
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return null;
  }
}

/** Set by bodyForm: whether the form it gave is all of its bytes read as UTF-8, as they were (no BOM). */
const formState = { isStoredBytes: false };

/**
 * A body's search form from its (decoded) bytes and its Content-Type. `isCut`: the bytes may end in the middle of a
 * character (cut at capture, or a stream decoded as far as it was kept).
 */
export function bodyForm(bytes: Uint8Array, contentType: unknown, isCut = false): string {
  formState.isStoredBytes = false;
  if (bytes.length === 0) return "";
  const type = typeof contentType === "string" ? contentType : "";
  const { charset, isText, isJson } = typeOf(type);
  let text: string | null = charset && charset !== "utf-8" && charset !== "utf8" ? decodeCharset(bytes, charset) : null;
  let isAllUtf8 = false;
  if (text === null) {
    const length = utf8Length(bytes, isCut);
    if (length >= 0) {
      text = utf8(bytes, 0, length);
      if (!isText && controlCharacters.test(text)) return binaryForm(bytes);
      isAllUtf8 = length === bytes.length && !hasUtf8Bom(bytes);
    } else if (isText) {
      text = decodeCharset(bytes, "windows-1252") ?? "";
    } else {
      return binaryForm(bytes);
    }
  }
  const read = isJson || /^\s*[[{]/.test(text.slice(0, 64)) ? jsonText(text) : text;
  const form = textForm(read);
  formState.isStoredBytes = isAllUtf8 && form === text;
  return form;
}
