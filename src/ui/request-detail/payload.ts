import type { TracedEvent } from "~/lib/protocol/event.ts";
import { asText, decodeBase64, mediaType } from "./body.ts";

/** Rows of a table in the detail: a name, a value, and for a cookie its attributes. */
export type Field = { name: string; value: string; note?: string };

/** Captured text is read into at most this many rows per table: the rest is counted, not shown. */
export const MAX_FIELDS = 500;

export type Fields = { rows: Field[]; more: number };

function bounded(rows: Field[]): Fields {
  return rows.length > MAX_FIELDS ? { rows: rows.slice(0, MAX_FIELDS), more: rows.length - MAX_FIELDS } : { rows, more: 0 };
}

/** Percent-decoding that never throws: a malformed escape is shown as it was sent. */
function decodeComponent(text: string): string {
  const spaced = text.replaceAll("+", " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** `a=1&b=x%20y&flag` as rows, decoded, in order (a repeated name is repeated). */
export function urlEncodedFields(text: string): Fields {
  const rows: Field[] = [];
  for (const part of text.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    rows.push(
      eq === -1
        ? { name: decodeComponent(part), value: "" }
        : { name: decodeComponent(part.slice(0, eq)), value: decodeComponent(part.slice(eq + 1)) },
    );
  }
  return bounded(rows);
}

/** The query string of a request target as rows; none without one. */
export function queryFields(path: string): Fields {
  const q = path.indexOf("?");
  if (q === -1) return { rows: [], more: 0 };
  const hash = path.indexOf("#", q);
  return urlEncodedFields(path.slice(q + 1, hash === -1 ? undefined : hash));
}

/** The parts of a multipart/form-data body: a field's text, or a file's name, type and size. */
function multipartFields(bytes: Uint8Array, contentType: string): Fields | null {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const marker = boundary?.[1] ?? boundary?.[2];
  if (!marker) return null;
  // One character per byte, so a file's size is its length; text fields are decoded as UTF-8 below.
  const body = byteString(bytes);
  const rows: Field[] = [];
  for (const chunk of body.split(`--${marker}`).slice(1)) {
    if (chunk.startsWith("--")) break;
    const split = chunk.indexOf("\r\n\r\n");
    if (split === -1) continue;
    const head = chunk.slice(0, split);
    const content = chunk.slice(split + 4).replace(/\r\n$/, "");
    const disposition = /content-disposition:([^\r\n]*)/i.exec(head)?.[1] ?? "";
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ?? "";
    const file = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
    const type = /content-type:\s*([^\r\n]*)/i.exec(head)?.[1]?.trim();
    const partBytes = Uint8Array.from(content, (c) => c.charCodeAt(0));
    const text = file === undefined ? asText(partBytes) : null;
    rows.push(
      text !== null
        ? { name: utf8(name), value: text }
        : { name: utf8(name), value: `${file === undefined ? "binary" : `file ${utf8(file)}`}, ${partBytes.length} bytes`, note: type },
    );
  }
  return bounded(rows);
}

/** Each byte as the character of the same code (TextDecoder's "latin1" is windows-1252, which remaps 0x80-0x9f). */
export function byteString(bytes: Uint8Array): string {
  let out = "";
  for (let at = 0; at < bytes.length; at += 8192) out += String.fromCharCode(...bytes.subarray(at, at + 8192));
  return out;
}

function utf8(latin1: string): string {
  return asText(Uint8Array.from(latin1, (c) => c.charCodeAt(0))) ?? latin1;
}

/** A request body's form fields (URL-encoded or multipart), or null when the body is not a form. */
export function formFields(event: TracedEvent): Fields | null {
  const type = mediaType(event.http_req_content_type ?? "");
  const bytes = decodeBase64(event.http_req_body ?? "");
  if (bytes.length === 0) return null;
  if (type === "application/x-www-form-urlencoded") {
    const text = asText(bytes);
    return text === null ? null : urlEncodedFields(text);
  }
  if (type === "multipart/form-data") return multipartFields(bytes, event.http_req_content_type);
  return null;
}

/** The cookies a request sent, from each `Cookie` header, in order. */
export function requestCookies(headers: ReadonlyArray<[string, string]>): Fields {
  const rows: Field[] = [];
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== "cookie") continue;
    for (const pair of value.split(";")) {
      const p = pair.trim();
      if (p === "") continue;
      const eq = p.indexOf("=");
      rows.push(eq === -1 ? { name: p, value: "" } : { name: p.slice(0, eq), value: p.slice(eq + 1) });
      if (rows.length > MAX_FIELDS) return bounded(rows);
    }
  }
  return bounded(rows);
}

/** The cookies a response set, one per `Set-Cookie` header, with their attributes (Path, Expires, HttpOnly...). */
export function responseCookies(headers: ReadonlyArray<[string, string]>): Fields {
  const rows: Field[] = [];
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== "set-cookie") continue;
    const [pair = "", ...attributes] = value.split(";");
    const eq = pair.indexOf("=");
    rows.push({
      name: (eq === -1 ? pair : pair.slice(0, eq)).trim(),
      value: eq === -1 ? "" : pair.slice(eq + 1).trim(),
      note: attributes
        .map((a) => a.trim())
        .filter(Boolean)
        .join("; "),
    });
    if (rows.length > MAX_FIELDS) break;
  }
  return bounded(rows);
}
