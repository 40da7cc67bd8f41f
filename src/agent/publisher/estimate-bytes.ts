import { type CapturedEvent, eventFieldTable } from "~/lib/protocol/event.ts";

const namesOf = (...types: string[]) => eventFieldTable.filter((f) => types.includes(f.type)).map((f) => f.name);
const textFields = namesOf("id", "kind", "text");
const bodyFields = namesOf("body");
const headerFields = namesOf("headers");
const tagFields = namesOf("tags");
/** Each field's number, flag or string index in the frame. */
const fixedBytes = 8 * eventFieldTable.length;

/**
 * Roughly what an event carries (every text, body, header and tag written out), for batching by size. Counted as if
 * nothing were de-duplicated, so a batch also stays under the server's maxBatchExpandedChars. Tolerates values of the
 * wrong type (the encoder writes them as neutral values): nothing here may throw into `send`.
 */
export function estimateBytes(e: CapturedEvent): number {
  const event = e as unknown as Record<string, unknown>;
  let bytes = fixedBytes;
  for (let i = 0; i < bodyFields.length; i++) bytes += bodyBytes(event[bodyFields[i]!]);
  for (let i = 0; i < textFields.length; i++) bytes += chars(event[textFields[i]!]);
  for (let i = 0; i < headerFields.length; i++) {
    const headers = event[headerFields[i]!];
    if (!Array.isArray(headers)) continue;
    for (const pair of headers) bytes += 8 + (Array.isArray(pair) ? chars(pair[0]) + chars(pair[1]) : 0);
  }
  for (let i = 0; i < tagFields.length; i++) {
    const tags = event[tagFields[i]!];
    if (typeof tags !== "object" || tags === null) continue;
    for (const key of Object.keys(tags)) bytes += key.length + chars((tags as Record<string, unknown>)[key]);
  }
  return bytes;
}

const chars = (value: unknown) => (typeof value === "string" ? value.length : 0);
const bodyBytes = (body: unknown) => (body instanceof Uint8Array ? body.byteLength : chars(body));
