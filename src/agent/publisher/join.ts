import type { JoinPublisherResponse } from "~/lib/protocol/api/publish.ts";

export type JoinInfo = { linkId?: string; linkUrl?: string; namespaceId?: string; expiresAt?: string };

export class JoinError extends Error {
  override name = "JoinError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** POST /api/JoinPublisher: a fresh WebSocket ticket for a namespace token or a shared link. */
export async function joinPublisher(
  endpoint: string,
  token: string | undefined,
  linkId: string | undefined,
): Promise<{ info: JoinInfo; websocketUrl: string }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${endpoint}/api/JoinPublisher`, {
    method: "POST",
    headers,
    body: JSON.stringify(linkId ? { linkId } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json().catch(() => ({}))) as Partial<JoinPublisherResponse>;
  if (!res.ok || !body.websocketUrl) {
    const error = body.error ?? `JoinPublisher answered ${res.status}`;
    throw new JoinError(res.status === 401 && token ? `TAPSCOPE_TOKEN was refused: ${error}` : error, res.status);
  }
  const info: JoinInfo = { linkId: body.linkId, linkUrl: body.linkUrl, namespaceId: body.namespaceId, expiresAt: body.expiresAt };
  return { info, websocketUrl: body.websocketUrl };
}

/** A refused token or link (4xx): retrying will not help. Anything else (no answer, 5xx) is retried. */
export function isRefusal(err: unknown): err is JoinError {
  return err instanceof JoinError && (err.status === 400 || err.status === 401 || err.status === 403 || err.status === 404);
}
