/**
 * The searchable forms of bodies and headers (the event's `search_*` fields), and the needles that search them. The
 * server makes the forms when it accepts an event (src/store/search-text.ts); the live evaluator, the SQL
 * compiler and the request detail's highlighting read them through these functions, so every screen agrees.
 */

/**
 * The first character of a binary body's search text: what follows is its bytes, one character each (byteText). Text
 * forms never hold it (textForm turns it into U+FFFD), so it tells the two kinds apart.
 */
export const binaryMarker = "\uFDD0";

/** Control bytes as their Unicode control pictures (U+2400...), so a stored form holds no control characters. */
const byteCodes = Uint16Array.from({ length: 256 }, (_, b) => (b < 0x20 ? 0x2400 + b : b === 0x7f ? 0x2421 : b));

/** Bytes as text, one character per byte: printable ASCII and 0x80-0xFF as themselves, control bytes as pictures. */
export function byteText(bytes: Uint8Array): string {
  const codes = new Uint16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) codes[i] = byteCodes[bytes[i] as number] as number;
  let out = "";
  for (let start = 0; start < codes.length; start += 8192) {
    out += String.fromCharCode.apply(null, codes.subarray(start, start + 8192) as unknown as number[]);
  }
  return out;
}

/** A binary body's search form. */
export function binaryForm(bytes: Uint8Array): string {
  return binaryMarker + byteText(bytes);
}

/** A text body's search form: the text, the marker character (should it occur) replaced. */
export function textForm(text: string): string {
  return text.includes(binaryMarker) ? text.replaceAll(binaryMarker, "\uFFFD") : text;
}

export const isBinaryForm = (form: string): boolean => form.charCodeAt(0) === 0xfdd0;

const encoder = new TextEncoder();

/** What a needle is in a binary body's form (its UTF-8 bytes as byte text): the needle itself for printable ASCII. */
export function binaryNeedle(needle: string): string {
  return /^[\x20-\x7e]*$/.test(needle) ? needle : byteText(encoder.encode(needle));
}

/** A header value in the headers' form: one line each, so line breaks read as spaces. */
export const headerLineValue = (value: string): string => (/[\r\n]/.test(value) ? value.replace(/[\r\n]/g, " ") : value);

/**
 * A side's headers as their search form: `\nname: value` per header in wire order, names lower-cased, ending with a
 * line break ("" for none). So `\nname: ` starts a header and every value ends at the next line break.
 */
export function headerForm(headers: ReadonlyArray<readonly [string, string]>): string {
  if (headers.length === 0) return "";
  let out = "";
  for (const [name, value] of headers) out += `\n${name.toLowerCase()}: ${headerLineValue(value)}`;
  return `${out}\n`;
}

/** The values of the headers named `name` (lower case) in a headers' form, in wire order. */
export function headerValues(form: string, name: string): string[] {
  const start = `\n${name}: `;
  const values: string[] = [];
  let at = form.indexOf(start);
  while (at >= 0) {
    const from = at + start.length;
    const end = form.indexOf("\n", from);
    values.push(form.slice(from, end < 0 ? form.length : end));
    at = end < 0 ? -1 : form.indexOf(start, end);
  }
  return values;
}

const hex4 = /^[0-9a-fA-F]{4}$/;

/**
 * JSON as a person reads it in the request detail: `\uXXXX` escapes become the characters they stand for, except
 * those JSON must keep escaped (quote, backslash, control characters), and `\/` becomes `/`. The rest of the text,
 * spacing included, is kept as sent. Linear in the text; a truncated document is read as far as it goes.
 */
export function jsonText(text: string): string {
  if (!text.includes("\\")) return text;
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) inString = !inString;
    else if (c === 0x5c && inString) {
      const next = text.charCodeAt(i + 1);
      if (next === 0x2f) {
        out += `${text.slice(from, i)}/`;
        from = i + 2;
      } else if (next === 0x75 && hex4.test(text.slice(i + 2, i + 6))) {
        const code = Number.parseInt(text.slice(i + 2, i + 6), 16);
        if (code >= 0x20 && code !== 0x22 && code !== 0x5c) {
          out += text.slice(from, i) + String.fromCharCode(code);
          from = i + 6;
        }
        i += 5;
        continue;
      }
      i++;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}
