/**
 * How a captured body is shown. Bodies arrive base64 (TracedEvent bodies); we decide once whether
 * they read as JSON (pretty-printed), a raster image (shown from a blob URL), text, or binary (hex rows).
 * Nothing here ever produces markup: every kind is rendered as text or as an <img> from a blob of an
 * inert raster type. A blob URL is same-origin, so one of an active type (SVG, HTML, XML, PDF) would run
 * captured script as the dashboard when opened in a tab: those bodies are shown as their source text.
 */
export type BodyView =
  | { kind: "empty" }
  /** `raw` as captured, `value` parsed (pretty-printed only when shown so: `prettyJson`). */
  | { kind: "json"; raw: string; value: unknown }
  | { kind: "text"; text: string }
  | { kind: "image"; bytes: Uint8Array; contentType: string }
  | { kind: "binary"; bytes: Uint8Array };

export function decodeBase64(b64: string): Uint8Array {
  if (!b64) return new Uint8Array(0);
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return new Uint8Array(0);
  }
}

/** Raster types a browser only ever decodes as pixels, each with the bytes its files begin with. */
const rasterSignatures: ReadonlyArray<{ types: readonly string[]; matches: (b: Uint8Array) => boolean }> = [
  { types: ["image/png"], matches: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { types: ["image/jpeg", "image/jpg", "image/pjpeg"], matches: (b) => startsWith(b, [0xff, 0xd8, 0xff]) },
  { types: ["image/gif"], matches: (b) => startsWith(b, [0x47, 0x49, 0x46, 0x38]) },
  { types: ["image/webp"], matches: (b) => startsWith(b, [0x52, 0x49, 0x46, 0x46]) && startsWith(b.subarray(8), [0x57, 0x45, 0x42, 0x50]) },
  { types: ["image/avif"], matches: (b) => startsWith(b.subarray(4), [0x66, 0x74, 0x79, 0x70]) },
  { types: ["image/bmp"], matches: (b) => startsWith(b, [0x42, 0x4d]) },
  { types: ["image/x-icon", "image/vnd.microsoft.icon"], matches: (b) => startsWith(b, [0, 0, 1, 0]) },
];

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

/** The inert raster type to show these bytes as, or null: the declared type must be one and the bytes must agree. */
export function rasterImageType(type: string, bytes: Uint8Array): string | null {
  const signature = rasterSignatures.find((s) => s.types.includes(type));
  return signature?.matches(bytes) ? (signature.types[0] ?? null) : null;
}

export function mediaType(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

export function isJsonType(type: string): boolean {
  return type === "application/json" || type.endsWith("+json") || type === "application/x-ndjson" || type === "text/json";
}

/** UTF-8 text, or null when the bytes are not text a person can read (invalid UTF-8 or control bytes). */
export function asText(bytes: Uint8Array): string | null {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // A truncated sample can end in the middle of a character: allow that one tail.
    if (bytes.length < 4) return null;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(trimPartialTail(bytes));
    } catch {
      return null;
    }
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 32 && c !== 9 && c !== 10 && c !== 13 && c !== 12) return null;
  }
  return text;
}

function trimPartialTail(bytes: Uint8Array): Uint8Array {
  const end = bytes.length;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const b = bytes[end - back]!;
    if ((b & 0xc0) === 0xc0) return bytes.subarray(0, end - back);
    if ((b & 0xc0) !== 0x80) break;
  }
  return bytes;
}

export function classifyBody(b64: string, contentType: string): BodyView {
  const bytes = decodeBase64(b64);
  if (bytes.length === 0) return { kind: "empty" };
  const type = mediaType(contentType);
  const raster = rasterImageType(type, bytes);
  if (raster) return { kind: "image", bytes, contentType: raster };
  const text = asText(bytes);
  if (text === null) return { kind: "binary", bytes };
  const trimmed = text.trimStart();
  if (isJsonType(type) || trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return { kind: "json", raw: text, value: JSON.parse(text) };
    } catch {
      // not (complete) JSON: a truncated sample, or JSON-looking text
    }
  }
  return { kind: "text", text };
}

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** Hex dump rows: offset, 16 bytes in hex, and the printable characters (33 to 126; others as "."). */
export function hexRows(bytes: Uint8Array, perRow = 16): Array<{ offset: string; hex: string; ascii: string }> {
  const rows: Array<{ offset: string; hex: string; ascii: string }> = [];
  for (let start = 0; start < bytes.length; start += perRow) {
    const slice = bytes.subarray(start, Math.min(start + perRow, bytes.length));
    let hex = "";
    let ascii = "";
    for (let i = 0; i < perRow; i++) {
      if (i > 0) hex += i === perRow / 2 ? "  " : " ";
      const b = slice[i];
      if (b === undefined) {
        hex += "  ";
        continue;
      }
      hex += b.toString(16).padStart(2, "0");
      ascii += b >= 33 && b <= 126 ? String.fromCharCode(b) : ".";
    }
    rows.push({ offset: start.toString(16).padStart(8, "0"), hex, ascii });
  }
  return rows;
}
