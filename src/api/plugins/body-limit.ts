import { Elysia } from "elysia";
import { AppError } from "~/lib/errors.ts";

/** Largest JSON body the API reads; requests are refused before their body is buffered or parsed. */
export const JSON_BODY_LIMIT = 256 * 1024;

/**
 * The server's own limit on any request body (Bun answers a bare 413 past it, before the app runs). Every body
 * the server takes is an API call's JSON, so this is a backstop just above the API's limit, which answers
 * in the error shape below it.
 */
export const SERVER_BODY_LIMIT = 4 * JSON_BODY_LIMIT;

function tooLarge(): AppError {
  return new AppError("PAYLOAD_TOO_LARGE", `Request body is larger than ${JSON_BODY_LIMIT} bytes.`);
}

async function readCapped(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > JSON_BODY_LIMIT) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const decoder = new TextDecoder();

/** Bodies verified over their exact bytes (Stripe signs the raw payload): handed over as text, never re-parsed. */
const RAW_TEXT_PATHS = new Set(["/api/StripeWebhook"]);

/**
 * Content-Length is checked up front; every body, whatever type it claims, is read only up to the limit (Elysia's
 * own parsers would read a text, form or binary body whole before validation refused it). The API speaks JSON:
 * a body of another type reaches validation as its text.
 */
export const bodyLimitPlugin = new Elysia({ name: "body-limit" })
  .onRequest(({ request }) => {
    if (!new URL(request.url).pathname.startsWith("/api/")) return;
    const length = Number(request.headers.get("content-length") ?? 0);
    if (length > JSON_BODY_LIMIT) throw tooLarge();
  })
  .onParse({ as: "global" }, async ({ request }, contentType) => {
    // A bodiless request has nothing to parse (Elysia's own fallback would call it invalid JSON).
    if (!request.body) return {};
    const bytes = await readCapped(request.body);
    if (bytes.length === 0) return {};
    const text = decoder.decode(bytes);
    if (RAW_TEXT_PATHS.has(new URL(request.url).pathname)) return text;
    if (typeof contentType !== "string" || !contentType.startsWith("application/json")) return text;
    try {
      return JSON.parse(text);
    } catch {
      throw new AppError("BAD_REQUEST", "Request body is not valid JSON.");
    }
  });
