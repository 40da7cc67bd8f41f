import { randomUUID } from "node:crypto";
import type { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import type { ResendRequestRequest, ResendRequestResponse } from "~/lib/protocol/api/replay.ts";
import type { ForwardedReplay, ForwardedReplayAnswer } from "~/lib/protocol/cluster.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type ReplayTarget, replayForbiddenText } from "~/lib/protocol/replay.ts";
import { decodeResult, decodeResultData } from "~/lib/protocol/tunnel.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

const tokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Control characters (CR, LF, NUL among them) would let an edited value split the request the run writes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters refused
const controlPattern = /[\u0000-\u0008\u000a-\u001f\u007f]/;
/** Framing and connection headers: the run sets them for the body it sends; `host` is the original's. */
const droppedHeaders = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
  "http2-settings",
]);

/**
 * Resend: sends an admin's edit of a captured HTTP request again through a run of the namespace that allows replays.
 * Only the method, the path and query, the headers and the body come from the caller; where it goes (the program's own
 * address for an inbound request, the host it called for an outbound one, TLS or not) is read from the stored event.
 * Admins only, checked on every call; `admit` spends the caller's budget of replays.
 */
export async function resendRequest({
  ctx,
  principal,
  input,
  workers,
  replays,
  admit,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  input: ResendRequestRequest;
  workers: Pick<WorkerRegistry, "dispatch">;
  replays: ReplayRuns;
  admit: () => void;
}): Promise<ResendRequestResponse> {
  const access = await requireNamespaceAccess({
    ctx,
    principal,
    namespaceId: input.namespaceId,
    write: true,
    forbiddenMessage: replayForbiddenText,
  });
  const edit = checkedEdit(input);
  admit();
  if (!isUuid(input.eventId)) throw new AppError("NOT_FOUND", "no such request in this namespace");
  const original = await loadStoredEvent(workers, access, input.eventId);
  const target = replayTarget(original);
  const answer = await replays.send(access.namespaceId, original.service, {
    replayOf: original.event_id,
    target,
    method: edit.method,
    path: edit.path,
    headers: edit.headers,
    body: input.body,
  });
  if (!answer.ok) throw new AppError("UNAVAILABLE", `the run could not send the request: ${answer.error}`);
  return {
    eventId: answer.eventId,
    status: answer.status,
    headers: answer.headers,
    body: answer.body,
    isBodyTruncated: answer.isBodyTruncated,
    durationUs: answer.durationUs,
    sentTo: describeTarget(target),
  };
}

/**
 * A Resend another node of the cluster forwarded here because a run of the namespace is connected to this node: the
 * edit is checked again as the API call's was, and the order goes only to a run of that namespace connected here (the
 * namespace its ticket named); where it goes is what the forwarding node read from the stored original. A refusal is
 * answered with the API error's code, for the forwarding node to answer its caller with.
 */
export async function serveForwardedReplay({
  replays,
  order,
}: {
  replays: Pick<ReplayRuns, "sendLocal">;
  order: ForwardedReplay;
}): Promise<ForwardedReplayAnswer> {
  try {
    const edit = checkedEdit(order);
    if (!order.replayOf || !isUuid(order.replayOf)) throw new AppError("BAD_REQUEST", "the original's id is not an event id");
    const { namespaceId, service, ...rest } = order;
    const answer = await replays.sendLocal(namespaceId, service, { ...rest, method: edit.method, path: edit.path, headers: edit.headers });
    if (!answer.ok) return { ok: false, error: answer.error };
    const { type: _type, id: _id, ...result } = answer;
    return result;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const refused = forwardableCodes.find((c) => c === err.code) ?? "UNAVAILABLE";
    return { ok: false, refused, error: err.message };
  }
}

const forwardableCodes = ["BAD_REQUEST", "CONFLICT", "RATE_LIMITED", "UNAVAILABLE"] as const;

/** The edit, or a BAD_REQUEST that says what to change. */
export function checkedEdit(input: Pick<ResendRequestRequest, "method" | "path" | "headers" | "body">): {
  method: string;
  path: string;
  headers: Array<[string, string]>;
} {
  const method = input.method.trim().toUpperCase();
  if (!tokenPattern.test(method)) throw new AppError("BAD_REQUEST", `"${input.method.slice(0, 32)}" is not an HTTP method`);
  if (method === "CONNECT") throw new AppError("BAD_REQUEST", "Resend does not open CONNECT tunnels");
  if (!input.path.startsWith("/")) {
    throw new AppError(
      "BAD_REQUEST",
      "give the path and query only, starting with /: a replay goes to the original request's host, never another",
    );
  }
  if (controlPattern.test(input.path) || /\s/.test(input.path)) {
    throw new AppError("BAD_REQUEST", "the path may not hold spaces or control characters (percent-encode them)");
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(input.body) || input.body.length % 4 !== 0) {
    throw new AppError("BAD_REQUEST", "the body must be base64");
  }
  const headers: Array<[string, string]> = [];
  for (const [rawName, value] of input.headers) {
    const name = rawName.trim();
    if (!tokenPattern.test(name)) throw new AppError("BAD_REQUEST", `"${name.slice(0, 64)}" is not a header name`);
    if (controlPattern.test(value)) throw new AppError("BAD_REQUEST", `the value of ${name} may not hold control characters`);
    const lower = name.toLowerCase();
    if (lower === "host") {
      throw new AppError("BAD_REQUEST", "the Host header is the original request's and cannot be changed: remove it from the edit");
    }
    if (droppedHeaders.has(lower)) continue;
    headers.push([name, value]);
  }
  return { method, path: input.path, headers };
}

/** Live shows a request before the store's batch holds it (within a second or two): a missing one is looked for again. */
async function loadStoredEvent(
  workers: Pick<WorkerRegistry, "dispatch">,
  access: { namespaceId: string; orgId: string },
  eventId: string,
): Promise<TracedEvent> {
  for (let attempt = 1; ; attempt++) {
    const event = await loadEvent(workers, access, eventId);
    if (event || attempt === storeLookups) {
      if (!event) throw new AppError("NOT_FOUND", "no such request in this namespace (it may be older than the retention)");
      return event;
    }
    await Bun.sleep(storeLookupGapMs);
  }
}

const storeLookups = 5;
const storeLookupGapMs = 600;

async function loadEvent(
  workers: Pick<WorkerRegistry, "dispatch">,
  access: { namespaceId: string; orgId: string },
  eventId: string,
): Promise<TracedEvent | undefined> {
  const frame = await workers.dispatch({
    namespaceId: access.namespaceId,
    orgId: access.orgId,
    role: "SELECT",
    request: { queryId: `replay-${randomUUID()}`, tags: {}, compression: "none", want: { kind: "event", eventId } },
  });
  const result = decodeResult(frame);
  if (result.tunnelError) throw new AppError("UNAVAILABLE", result.tunnelError);
  if (result.databaseError) throw new AppError("UNAVAILABLE", result.databaseError);
  return (await decodeResultData(result)).data[0] as TracedEvent | undefined;
}

/** Where the original went, from its own fields; an event that cannot be sent again says why. */
export function replayTarget(e: TracedEvent): ReplayTarget {
  if (e.protocol !== "http") throw new AppError("BAD_REQUEST", "only HTTP requests can be resent");
  if (e.http_req_method === "CONNECT" || e.tags?.upgrade) {
    throw new AppError("BAD_REQUEST", "a CONNECT tunnel or a WebSocket handshake cannot be resent");
  }
  if (!e.http_server_addr) throw new AppError("BAD_REQUEST", "the request's address was not recorded");
  const isTls = e.tags?.tls === "decrypted" || e.tls_server_name !== "";
  const hostName = e.http_req_host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  return {
    direction: e.http_is_outgoing ? "outbound" : "inbound",
    address: e.http_server_addr,
    host: e.http_req_host,
    isTls,
    serverName: e.tls_server_name || hostName,
  };
}

export function describeTarget(t: ReplayTarget): string {
  const tls = t.isTls ? " (TLS)" : "";
  return t.direction === "inbound" ? `the program at ${t.address}${tls}` : `${t.host || t.address} at ${t.address}${tls}`;
}

export const REPLAYS_RATE_LIMITED = "too many requests resent; try again in a minute";
