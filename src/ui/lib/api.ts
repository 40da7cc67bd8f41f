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

export async function api<T>(name: string, body: unknown = {}, options: ApiOptions = {}): Promise<T> {
  const method = options.method ?? "POST";
  const response = await fetch(`${options.baseUrl ?? ""}/api/${name}`, {
    method,
    credentials: "same-origin",
    headers: method === "POST" ? { "content-type": "application/json" } : undefined,
    body: method === "POST" ? JSON.stringify(body) : undefined,
    signal: options.signal,
  });
  if (response.status !== 200) throw await toApiError(response);
  return (await response.json()) as T;
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

/** Aborted requests (navigation away, unmounted screens) are not failures and are ignored. */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || (err as { code?: number }).code === 20);
}
