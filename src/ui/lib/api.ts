import { errorMessage } from "~/lib/errors.ts";
import type { ApiCallName, ApiRequest, ApiResponse } from "~/lib/protocol/api/calls.ts";

/**
 * The browser's one way to call /api: same origin, credentials, JSON body. Any status other than 200
 * throws an ApiError whose message carries the status, the trace id and the server's error text.
 */
export const TRACE_ID_HEADER = "x-trace-id";

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    readonly status: number,
    readonly traceId: string | undefined,
    readonly serverError: string | undefined,
  ) {
    super(message);
  }
}

export type ApiOptions = { signal?: AbortSignal; method?: "GET" | "POST"; baseUrl?: string };

/** A JSON call, typed by its schemas in lib/protocol/api (types only: no schema code reaches the bundle). */
export async function api<Name extends ApiCallName>(
  name: Name,
  body: ApiRequest<Name>,
  options: ApiOptions = {},
): Promise<ApiResponse<Name>> {
  const method = options.method ?? "POST";
  const response = await fetch(`${options.baseUrl ?? ""}/api/${name}`, {
    method,
    credentials: "same-origin",
    headers: method === "POST" ? { "content-type": "application/json" } : undefined,
    body: method === "POST" ? JSON.stringify(body) : undefined,
    signal: options.signal,
  });
  if (response.status !== 200) throw await toApiError(response);
  return (await response.json()) as ApiResponse<Name>;
}

export async function toApiError(response: Response): Promise<ApiError> {
  const traceId = response.headers.get(TRACE_ID_HEADER) ?? undefined;
  let serverError: string | undefined;
  try {
    const parsed = (await response.json()) as { error?: unknown };
    if (typeof parsed?.error === "string" && parsed.error) serverError = parsed.error;
  } catch {
    // not JSON: the status alone has to do
  }
  let message = `got unexpected status code ${response.status}`;
  if (traceId) message += ` (trace id ${traceId})`;
  if (serverError) message += `: ${serverError}`;
  return new ApiError(message, response.status, traceId, serverError);
}

/** A failure as a person reads it: a sentence, and the status and trace id (for support) on a details line. */
export type ErrorText = { message: string; details: string | null };

const statusMessages: Record<number, string> = {
  401: "Your session has ended. Sign in again.",
  403: "You don't have permission to do this.",
  404: "It was not found. It may have been deleted.",
  413: "That is too large to send.",
  429: "Too many requests right now. Wait a moment and try again.",
  503: "The service is unavailable right now. Try again in a moment.",
};

/**
 * The one place API failures become words for users. Our server's own error text is shown for refused
 * input (it says what to change); other statuses get a sentence of ours; `notFound` names what a 404 lost.
 */
export function describeError(err: unknown, options: { notFound?: string } = {}): ErrorText {
  if (err instanceof ApiError) {
    const details = [`status ${err.status}`, err.traceId ? `trace id ${err.traceId}` : null].filter(Boolean).join(", ");
    const isRefusedInput = err.status === 400 || err.status === 409 || err.status === 422;
    const message =
      (err.status === 404 ? options.notFound : undefined) ??
      (isRefusedInput && err.serverError ? sentence(err.serverError) : undefined) ??
      statusMessages[err.status] ??
      (err.status >= 500 ? "Something went wrong on the server. Try again in a moment." : "The request failed. Try again.");
    return { message, details: `Details: ${details}` };
  }
  // fetch rejects with a TypeError when the server cannot be reached at all.
  if (err instanceof TypeError && /fetch|network|load failed/i.test(err.message)) {
    return { message: "Could not reach the server. Check your connection and try again.", details: null };
  }
  return { message: errorMessage(err), details: null };
}

function sentence(text: string): string {
  const trimmed = text.trim();
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** window.alert for a failed action: "{lead}: {message}", and the details line under it. */
export function alertError(lead: string, err: unknown, alert: (text: string) => void = (text) => window.alert(text)): void {
  const { message, details } = describeError(err);
  alert(`${lead}: ${message}${details ? `\n\n${details}` : ""}`);
}

/** Aborted requests (navigation away, unmounted screens) are not failures and are ignored. */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || (err as { code?: number }).code === 20);
}
