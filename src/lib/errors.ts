/**
 * The one error class of the server. A small closed set of codes, each mapped to one HTTP status;
 * the error plugin renders it as `{ error }` with the trace id header.
 */
export const errorStatus = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export class AppError extends Error {
  override name = "AppError";
  /** RATE_LIMITED: when to try again (the Retry-After header). */
  readonly retryAfterMs?: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { retryAfterMs?: number } = {},
  ) {
    super(message);
    this.retryAfterMs = options.retryAfterMs;
  }
  get status(): number {
    return errorStatus[this.code];
  }
}

export const TRACE_ID_HEADER = "x-trace-id";

/** The text of anything thrown: an Error's message, any other value as a string. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Like errorMessage, with the stack where there is one: for reports a person reads. */
export function errorDetail(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/** Anything thrown, as an Error: a thrown string or other value becomes one carrying its text. */
export function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
