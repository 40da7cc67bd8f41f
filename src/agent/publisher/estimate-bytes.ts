import { type CapturedEvent, eventFieldTable } from "~/lib/protocol/event.ts";

const chars = (value: unknown) => (typeof value === "string" ? value.length : 0);
const bodyBytes = (body: unknown) => (body instanceof Uint8Array ? body.byteLength : chars(body));

function pairsBytes(headers: unknown): number {
  if (!Array.isArray(headers)) return 0;
  let bytes = 0;
  for (const pair of headers) bytes += 8 + (Array.isArray(pair) ? chars(pair[0]) + chars(pair[1]) : 0);
  return bytes;
}

function mapBytes(tags: unknown): number {
  if (typeof tags !== "object" || tags === null) return 0;
  let bytes = 0;
  for (const key of Object.keys(tags)) bytes += key.length + chars((tags as Record<string, unknown>)[key]);
  return bytes;
}

/**
 * Roughly what an event carries (every text, body, header and tag of the field table written out, and 8 bytes a
 * field), for batching by size. Counted as if nothing were de-duplicated, so a batch also stays under the server's
 * maxBatchExpandedChars. Tolerates values of the wrong type (the encoder writes them as neutral values): nothing here
 * may throw into `send`. Made once from the table as one function that reads each field by name, as a hand-written
 * one would (the names are the table's own, checked to be snake_case).
 */
export const estimateBytes: (e: CapturedEvent) => number = (() => {
  const terms = eventFieldTable.map((f) => {
    const value = `e.${f.name}`;
    if (f.type === "id" || f.type === "kind" || f.type === "text") return `chars(${value})`;
    if (f.type === "body") return `bodyBytes(${value})`;
    if (f.type === "headers") return `pairsBytes(${value})`;
    if (f.type === "tags") return `mapBytes(${value})`;
    return null;
  });
  const body = `return ${[8 * eventFieldTable.length, ...terms.filter((t) => t !== null)].join(" + ")};`;
  const make = new Function("chars", "bodyBytes", "pairsBytes", "mapBytes", `return (e) => { ${body} };`);
  return make(chars, bodyBytes, pairsBytes, mapBytes) as (e: CapturedEvent) => number;
})();
