import { Elysia } from "elysia";
import { AppError, TRACE_ID_HEADER } from "~/lib/errors.ts";
import { randomId } from "~/lib/server/ids.ts";
import { log } from "~/lib/server/logger.ts";

/**
 * Gives every request a trace id (answer header and the request's log line) and renders every
 * failure as JSON `{ error }`. Unknown errors are logged with the trace id and become 500.
 */
export const errorsPlugin = new Elysia({ name: "errors" })
  // Without a Host header (HTTP/1.0, some health checkers) Bun hands over a relative URL that every `new URL(request.url)`
  // downstream would throw on: refused here, first, with a clear 400.
  .onRequest(({ request }) => {
    if (!URL.canParse(request.url)) throw new AppError("BAD_REQUEST", "the request has no Host header");
  })
  .derive({ as: "global" }, ({ set }) => {
    const traceId = randomId(12);
    set.headers[TRACE_ID_HEADER] = traceId;
    return { traceId, startedAt: performance.now() };
  })
  .onError({ as: "global" }, ({ code, error: thrown, set, request, path }) => {
    // Elysia wraps what a body parser throws (e.g. the body limit's 413) in its ParseError.
    const cause = (thrown as { cause?: unknown }).cause;
    const error = code === "PARSE" && cause instanceof AppError ? cause : thrown;
    const traceId = (set.headers[TRACE_ID_HEADER] as string | undefined) ?? randomId(12);
    set.headers[TRACE_ID_HEADER] = traceId;
    set.headers["content-type"] = "application/json; charset=utf-8";
    let status = 500;
    let message = "internal error";
    if (error instanceof AppError) {
      status = error.status;
      message = error.message;
      if (error.retryAfterMs !== undefined) set.headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
    } else if (code === "VALIDATION" && (error as { type?: string }).type === "response") {
      // Our own answer broke its declared schema: a server bug, not the caller's.
      log.error("response failed its schema", { traceId, method: request.method, path, err: error });
    } else if (code === "VALIDATION") {
      status = 400;
      message = validationMessage(error);
    } else if (code === "PARSE") {
      status = 400;
      message = "request body is not valid JSON";
    } else if (code === "NOT_FOUND") {
      status = 404;
      message = "not found";
    } else {
      log.error("unhandled error", { traceId, method: request.method, path, err: error });
    }
    set.status = status;
    if (status < 500 || error instanceof AppError) {
      log.info("request failed", { traceId, method: request.method, path, status, error: message });
    }
    return JSON.stringify({ error: message });
  })
  .onAfterResponse({ as: "global" }, (ctx) => {
    const { request, path, set } = ctx;
    const traceId = set.headers[TRACE_ID_HEADER];
    const startedAt = (ctx as { startedAt?: number }).startedAt;
    log.debug("request", {
      traceId,
      method: request.method,
      path,
      status: set.status,
      ms: startedAt === undefined ? undefined : Math.round((performance.now() - startedAt) * 10) / 10,
    });
  });

function validationMessage(error: unknown): string {
  const e = error as { all?: Array<{ path?: string; summary?: string; message?: string }>; message?: string };
  const first = e.all?.[0];
  if (first) {
    const where = first.path ? first.path.replace(/^\//, "").replaceAll("/", ".") : "body";
    return `invalid request: ${where}: ${first.summary ?? first.message ?? "invalid value"}`;
  }
  return "invalid request";
}
