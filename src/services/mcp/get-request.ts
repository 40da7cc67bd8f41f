import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type GetRequestInput, mcpLimits } from "~/lib/protocol/mcp.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { eventSummary, type McpDeps, McpToolError, type RequestSummary, runQuery } from "./namespace-query.ts";

/** A body as an agent reads it: text when it is text, else what it is; cut at maxBodyChars. */
export type BodyText = { text: string | null; bytes: number; is_truncated: boolean; note?: string };

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what tell binary from text
const binaryCharacters = /[\u0000-\u0008\u000e-\u001f]/;

const textTypes = /^(text\/|application\/(json|[\w.+-]*\+json|xml|[\w.+-]*\+xml|x-www-form-urlencoded|javascript|graphql|x-ndjson|yaml))/i;

export function bodyText(base64: string, contentType: string, wasCutAtCapture: boolean, wireBytes: number): BodyText {
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length === 0) return { text: "", bytes: wireBytes, is_truncated: wasCutAtCapture };
  let text: string | null = null;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // not UTF-8: described, not shown
  }
  const isText = text !== null && (textTypes.test(contentType) || !binaryCharacters.test(text));
  if (!isText || text === null) {
    return {
      text: null,
      bytes: wireBytes,
      is_truncated: wasCutAtCapture,
      note: `binary body (${contentType || "no content type"}), not shown as text`,
    };
  }
  const isCut = text.length > mcpLimits.maxBodyChars;
  return {
    text: isCut ? text.slice(0, mcpLimits.maxBodyChars) : text,
    bytes: wireBytes,
    is_truncated: wasCutAtCapture || isCut,
    ...(wasCutAtCapture
      ? { note: "the capture kept only the start of this body" }
      : isCut
        ? { note: `cut at ${mcpLimits.maxBodyChars} characters` }
        : {}),
  };
}

const ms = (us: number) => (us < 0 ? null : Math.round(us / 10) / 100);

export type RequestDetail = RequestSummary & {
  http_version: string;
  client_address: string;
  server_address: string;
  tls: { server_name: string; state: string; reason: string };
  timings_ms: {
    total: number | null;
    connect: number | null;
    tls: number | null;
    send: number | null;
    wait: number | null;
    receive: number | null;
  };
  request: { headers: Array<[string, string]>; body: BodyText };
  response: { headers: Array<[string, string]>; body: BodyText };
  process: { host: string; pid: number; executable: string; command_line: string; user: string; kubernetes_namespace: string };
  bytes_sent: number;
  bytes_received: number;
  parent: RequestSummary | null;
  children: RequestSummary[];
};

function detailOf(e: TracedEvent): Omit<RequestDetail, "parent" | "children"> {
  return {
    ...eventSummary(e),
    http_version: e.http_version,
    client_address: e.http_client_addr,
    server_address: e.http_server_addr,
    tls: { server_name: e.tls_server_name, state: e.tags.tls ?? "", reason: e.tags.tls_reason ?? "" },
    timings_ms: {
      total: ms(e.http_duration),
      connect: ms(e.timing_connect),
      tls: ms(e.timing_tls),
      send: ms(e.timing_send),
      wait: ms(e.timing_wait),
      receive: ms(e.timing_receive),
    },
    request: {
      headers: e.http_req_headers,
      body: bodyText(e.http_req_body, e.http_req_content_type, e.http_req_body_truncated, e.http_req_body_size_bytes_wire),
    },
    response: {
      headers: e.http_resp_headers,
      body: bodyText(e.http_resp_body, e.http_resp_content_type, e.http_resp_body_truncated, e.http_resp_body_size_bytes_wire),
    },
    process: {
      host: e.hostname,
      pid: e.process_id,
      executable: e.process_executable_name,
      command_line: e.process_command_line,
      user: e.process_user,
      kubernetes_namespace: e.kubernetes_namespace,
    },
    bytes_sent: e.bytes_sent,
    bytes_received: e.bytes_received,
  };
}

/** get_request: one request in full, with the request it was made under and the calls made while serving it. */
export async function getRequest(deps: McpDeps, input: GetRequestInput): Promise<RequestDetail> {
  const eventId = input.event_id.trim();
  if (!isUuid(eventId)) throw new McpToolError(`"${input.event_id.slice(0, 64)}" is not an event_id (a UUID, as search_requests returns)`);
  const data = await runQuery(deps, { kind: "event", eventId });
  const event = data.data[0] as TracedEvent | undefined;
  if (!event) throw new McpToolError(`no request ${eventId} in this namespace (it may be older than the retention)`);
  let parent: RequestSummary | null = null;
  if (event.parent_event_id && isUuid(event.parent_event_id)) {
    const startMs = Math.floor(event.time / 1000);
    const found = await runQuery(deps, {
      kind: "events",
      eventIds: [event.parent_event_id],
      range: {
        lowerMs: Math.max(Date.UTC(2000, 0, 1), startMs - 86_400_000),
        upperMs: Math.min(deps.now() + 3_600_000, startMs + 86_400_000),
      },
    });
    const p = found.data[0] as TracedEvent | undefined;
    parent = p ? eventSummary(p) : null;
  }
  return { ...detailOf(event), parent, children: (data.children ?? []).slice(0, 200).map(eventSummary) };
}
