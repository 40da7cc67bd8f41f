import { type ReactNode, useEffect, useMemo, useRef, useState } from "react";
import { dbOutcome, dbOutcomeClass, dbSystemName, isDbCall } from "~/lib/db-call.ts";
import { displayUrl, eventUrl, isDecrypted } from "~/lib/event-url.ts";
import type { HighlightTerms } from "~/lib/filter/search.ts";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { formatFullTime } from "~/lib/time/zone.ts";
import { isWebSocketHandshake, isWebSocketMessage } from "~/lib/websocket-messages.ts";
import { useTimeZone } from "~/ui/lib/time-zone.ts";
import { PendingStatus, PendingWait } from "../components/pending-marker.tsx";
import { LockIcon } from "../components/tls-marker.tsx";
import { unansweredSentence } from "../components/unanswered-marker.tsx";
import { statusClass } from "../live/format.ts";
import { isPendingRow } from "../live/pending-rows.ts";
import { asText, decodeBase64 } from "./body.ts";
import { BodyView } from "./body-view.tsx";
import { CallWaterfall } from "./call-waterfall.tsx";
import { copyAs, copyFormats } from "./copy-as.ts";
import { toCurl } from "./curl.ts";
import { DbCallDetail } from "./db-call-detail.tsx";
import { HeaderBlock, KeyValueTable, rawHeaders } from "./header-block.tsx";
import { MiddleCutText } from "./middle-cut-text.tsx";
import { PayloadTables } from "./payload-view.tsx";
import { redactedPlaces } from "./redacted.ts";
import { ResendPanel } from "./resend-panel.tsx";
import { type DetailSection, SectionNav } from "./section-nav.tsx";
import { tagLabel, tagValue } from "./tag-labels.ts";
import { timingSteps } from "./timing.ts";
import { useCopy } from "./use-copy.ts";
import { Waterfall } from "./waterfall.tsx";
import { directionOf, MessageBody, WebSocketMessages } from "./websocket-messages.tsx";

export type RequestDetailProps = {
  event: TracedEvent;
  /**
   * Outbound calls made while this request was served, the calls made through this CONNECT's tunnel, or this
   * WebSocket handshake's messages (events whose parent_event_id is this event_id).
   */
  outboundCalls?: TracedEvent[];
  /**
   * The inbound request this outbound call was made for, the CONNECT whose tunnel carried it, or the handshake of
   * this WebSocket message, when known.
   */
  parent?: TracedEvent;
  onOpen?: (event: TracedEvent) => void;
  onClose?: () => void;
  onSaveHar?: (event: TracedEvent) => void;
  onSaveAllHar?: () => void;
  /** A URL that reopens this request; Copy link is hidden without one. */
  link?: string;
  /** Texts the filter looked for in headers and bodies: marked where they are. */
  highlight?: HighlightTerms;
  /** The namespace the request is in: Resend is offered with it (a shared link's viewer has none). */
  namespaceId?: string;
};

/**
 * The request detail shared by the live frame and the requests explorer: summary, actions, timing
 * waterfall with its culprit, outbound calls, and both sides' headers and bodies (always as text).
 */
/** A forward proxy's CONNECT: the calls made through its tunnel are its children. */
function isTunnel(event: TracedEvent): boolean {
  return event.http_req_method === "CONNECT";
}

export function RequestDetail({
  event,
  outboundCalls = [],
  parent,
  onOpen,
  onClose,
  onSaveHar,
  onSaveAllHar,
  link,
  highlight,
  namespaceId,
}: RequestDetailProps) {
  const [isResendOpen, setIsResendOpen] = useState(false);
  const { copiedKey, failedKey, copy } = useCopy();
  const isHandshake = isWebSocketHandshake(event);
  const isMessage = isWebSocketMessage(event);
  const isPending = isPendingRow(event);
  const isHttp = event.protocol === "http";
  const messages = useMemo(() => (isHandshake ? outboundCalls.filter(isWebSocketMessage) : []), [isHandshake, outboundCalls]);
  const calls = isHandshake ? outboundCalls.filter((c) => !isWebSocketMessage(c)) : outboundCalls;
  // One culprit for the whole request: its slowest timing step, or, when that is the processing and the calls made
  // during it are shown, the slowest of those calls or the program's own time.
  const hasCallBreakdown = !event.http_is_outgoing && !isTunnel(event) && !isHandshake && calls.length > 0;
  const timingCulprit = useMemo(() => timingSteps(event).find((s) => s.isCulprit)?.label, [event]);
  const isCulpritInCalls = timingCulprit === undefined || timingCulprit === "processing";
  const [zone] = useTimeZone();
  // The live frame re-renders as events stream in: decode the body for cURL once per event.
  const curl = useMemo(() => (isHttp ? toCurl(event) : null), [event, isHttp]);
  const redacted = useMemo(() => (isHttp ? redactedPlaces(event) : []), [event, isHttp]);
  const label = (key: string, idle: string) => (copiedKey === key ? "Copied!" : failedKey === key ? "Copy failed" : idle);
  // A request opened from a search shows its first match.
  const content = useRef<HTMLDivElement>(null);
  const hasTerms = (highlight?.body.length ?? 0) + (highlight?.headers.length ?? 0) > 0;
  // biome-ignore lint/correctness/useExhaustiveDependencies: once per request opened
  useEffect(() => {
    if (hasTerms) content.current?.querySelector("mark")?.scrollIntoView?.({ block: "center" });
  }, [event.event_id, hasTerms]);

  // The action bar is a list: an action is one entry here (a button, or a menu of buttons).
  const actions: DetailAction[] = [];
  if (curl) actions.push({ key: "curl", label: label("curl", "Copy as cURL"), run: () => copy("curl", curl.command) });
  if (isHttp)
    actions.push({
      key: "copy-as",
      label: "Copy as… ▾",
      items: copyFormats
        .filter((f) => f.format !== "curl")
        .map((f) => ({ key: f.format, label: label(f.format, `Copy as ${f.label}`), run: () => copy(f.format, copyAs(f.format, event)) })),
    });
  if (isHttp)
    actions.push({ key: "response", label: label("response", "Copy response"), run: () => copy("response", responseText(event)) });
  // A request still waiting has no exchange to save yet.
  if (onSaveHar && !isDbCall(event) && !isPending) actions.push({ key: "har", label: "Save as HAR", run: () => onSaveHar(event) });
  if (onSaveAllHar) actions.push({ key: "har-all", label: "Save all shown as HAR", run: onSaveAllHar });
  if (link) actions.push({ key: "link", label: label("link", "Copy link"), run: () => copy("link", link) });
  if (namespaceId && curl && !isMessage) actions.push({ key: "resend", label: "Resend", run: () => setIsResendOpen(true) });

  const sections: DetailSection[] = [];
  sections.push({
    id: "general",
    title: "General",
    content: (
      <>
        <KeyValueTable label="General" rows={generalRows(event, zone)} isProse />
        {event.tags?.tls || event.tls_server_name ? (
          <Subsection title="TLS">
            <TlsFacts event={event} />
          </Subsection>
        ) : null}
        <Subsection title="Details">
          <Facts event={event} />
        </Subsection>
      </>
    ),
  });
  if (isMessage) sections.push({ id: "message", title: "Message", content: <MessageBody message={event} /> });
  else
    sections.push({
      id: "timing",
      title: "Timing",
      content: <Waterfall event={event} isProcessingBrokenDown={hasCallBreakdown} />,
    });
  if (parent)
    sections.push({
      id: "parent",
      title: isMessage ? "WebSocket" : isTunnel(parent) ? "Tunnel" : "Made for",
      content: (
        <Subsection title={isMessage ? "Message of the WebSocket" : isTunnel(parent) ? "Through the proxy tunnel" : "Made while serving"}>
          {event.tags?.parent_guess ? <p className="text-xs text-amber-400">A guess: {event.tags.parent_guess}.</p> : null}
          <EventLine event={parent} onOpen={onOpen} />
        </Subsection>
      ),
    });
  if (isHandshake)
    sections.push({
      id: "messages",
      title: `Messages (${messages.length.toLocaleString("en-US")})`,
      content: (
        <Subsection title={`WebSocket messages (${messages.length.toLocaleString("en-US")})`}>
          <WebSocketMessages messages={messages} openedAt={event.time} />
        </Subsection>
      ),
    });
  if ((!event.http_is_outgoing || isTunnel(event)) && !isMessage && !(isHandshake && calls.length === 0))
    sections.push({
      id: "calls",
      title: `Calls made (${calls.length})`,
      content: (
        <Subsection title={`${isTunnel(event) ? "Calls through this tunnel" : "Calls made while serving"} (${calls.length})`}>
          {calls.length === 0 ? (
            <p className="text-xs text-zinc-500">
              {isTunnel(event) ? "Nothing was recorded through this tunnel." : "No outbound calls were made while serving this request."}
            </p>
          ) : hasCallBreakdown ? (
            <CallWaterfall request={event} calls={calls} onOpen={onOpen} isCulpritHere={isCulpritInCalls} />
          ) : (
            <ul aria-label={isTunnel(event) ? "Calls through this tunnel" : "Outbound calls"} className="space-y-0.5">
              {calls.map((child) => (
                <li key={child.event_id}>
                  <EventLine event={child} onOpen={onOpen} offsetUs={child.time - event.time} parentDuration={event.http_duration} />
                </li>
              ))}
            </ul>
          )}
        </Subsection>
      ),
    });
  if (isHttp) {
    sections.push({
      id: "headers",
      title: `Headers (${(event.http_req_headers?.length ?? 0) + (event.http_resp_headers?.length ?? 0)})`,
      content: (
        <>
          <HeaderBlock label="Request headers" headers={event.http_req_headers} highlight={highlight?.headers} />
          <HeaderBlock label="Response headers" headers={event.http_resp_headers} highlight={highlight?.headers} />
        </>
      ),
    });
    sections.push({
      id: "payload",
      title: "Payload",
      content: (
        <>
          <PayloadTables event={event} />
          <h4 className="text-xs font-medium text-zinc-300">Request body</h4>
          <BodyView
            highlight={highlight?.body}
            label="Request body"
            base64={event.http_req_body}
            contentType={event.http_req_content_type}
            isTruncated={event.http_req_body_truncated}
            wireSize={event.http_req_body_size_bytes_wire}
          />
        </>
      ),
    });
    sections.push({
      id: "response",
      title: "Response",
      content: (
        <>
          <h4 className="text-xs font-medium text-zinc-300">Response body</h4>
          <BodyView
            highlight={highlight?.body}
            label="Response body"
            base64={event.http_resp_body}
            contentType={event.http_resp_content_type}
            isTruncated={event.http_resp_body_truncated}
            wireSize={event.http_resp_body_size_bytes_wire}
          />
        </>
      ),
    });
  } else if (isDbCall(event)) {
    sections.push({
      id: "statement",
      title: event.db_system === "redis" ? "Command" : "Statement",
      content: <DbCallDetail event={event} />,
    });
  } else if (!isMessage) {
    sections.push({
      id: "connection",
      title: "Connection",
      content: (
        <p className="text-xs text-zinc-300">
          {formatBytes(event.bytes_sent)} sent, {formatBytes(event.bytes_received)} received (not HTTP).
        </p>
      ),
    });
  }

  return (
    <section aria-label="Request detail" className="@container flex h-full flex-col overflow-hidden bg-zinc-900 text-zinc-100">
      <header className="border-b border-zinc-800 p-3">
        <div className="flex items-start gap-2">
          <div className="min-w-0 flex-1">
            <div className="flex items-center gap-2 font-mono text-sm">
              {event.http_is_outgoing ? (
                <span title="Outbound call made by the program" className="text-sky-400">
                  ↗
                </span>
              ) : null}
              {isDbCall(event) ? (
                <>
                  <span className="font-semibold text-violet-300">
                    {dbSystemName(event.db_system)} {event.db_operation}
                  </span>
                  <span className={`font-semibold ${dbOutcomeClass(event)}`}>{dbOutcome(event)}</span>
                </>
              ) : isMessage ? (
                <>
                  <span role="img" aria-label={directionOf(event).label} className={directionOf(event).className}>
                    {directionOf(event).arrow}
                  </span>
                  <span className="font-semibold">WebSocket {event.ws_opcode}</span>
                  <span className="text-zinc-400">{formatBytes(event.ws_size >= 0 ? event.ws_size : event.ws_wire_size)}</span>
                </>
              ) : (
                <>
                  <span className="font-semibold">{event.http_req_method || event.protocol.toUpperCase()}</span>
                  {isPending ? (
                    <PendingStatus />
                  ) : (
                    <span className={`font-semibold ${statusClass(event.http_resp_status_code)}`}>
                      {event.http_resp_status_code || "—"}
                    </span>
                  )}
                </>
              )}
              <span className="text-zinc-400">{isPending ? <PendingWait since={event.time} /> : formatDuration(event.http_duration)}</span>
            </div>
            <p className="mt-1 font-mono text-xs break-all text-zinc-300" data-testid="detail-url">
              {isMessage && parent
                ? eventUrl(parent)
                : event.protocol === "tcp" || isDbCall(event) || isTunnel(event) || isMessage
                  ? displayUrl(event)
                  : eventUrl(event)}
            </p>
            <p className="mt-1 text-xs text-zinc-500">
              <time data-testid="detail-time">{formatFullTime(event.time, zone)}</time> ·{" "}
              {isDbCall(event) ? dbSystemName(event.db_system) : `HTTP/${event.http_version || "?"}`} · {event.http_client_addr} →{" "}
              {event.http_server_addr}
              {event.process_executable_name ? ` · ${event.process_executable_name} (pid ${event.process_id})` : ""}
            </p>
            {event.http_unanswered ? (
              <p className="mt-1 text-xs text-red-400" data-testid="detail-unanswered">
                {unansweredSentence(event)}
              </p>
            ) : null}
            {tlsSummary(event) ? (
              <p
                className={`mt-1 text-xs ${event.tags?.tls === "decrypted" ? "text-emerald-400" : "text-amber-400"}`}
                data-testid="detail-tls"
              >
                {isDecrypted(event) ? <LockIcon className="mr-1 inline size-3 align-[-1px]" /> : null}
                {tlsSummary(event)}
              </p>
            ) : null}
          </div>
          {onClose ? (
            <button
              type="button"
              aria-label="Close detail"
              onClick={onClose}
              className="rounded p-1 text-zinc-400 hover:bg-zinc-800 hover:text-zinc-100"
            >
              ✕
            </button>
          ) : null}
        </div>
        <div className="mt-2 flex flex-wrap gap-1.5">
          {actions.map((action) =>
            "items" in action ? (
              <ActionMenu key={action.key} label={action.label} items={action.items} />
            ) : (
              <ActionButton key={action.key} onClick={action.run}>
                {action.label}
              </ActionButton>
            ),
          )}
        </div>
        {curl?.isBodyTruncated ? (
          <p className="mt-1 text-xs text-amber-400">The request body was truncated: the copied request sends only the captured part.</p>
        ) : null}
        {redacted.length > 0 ? (
          <p className="mt-1 text-xs text-amber-400" data-testid="redacted-notice">
            Redacted when captured: {redacted.join(", ")}. A copied request sends the markers, not the secrets: put the real values in
            before you replay it.
          </p>
        ) : null}
      </header>

      <SectionNav sections={sections} scroller={content} />
      <div ref={content} className="relative flex-1 space-y-4 overflow-auto p-3">
        {isResendOpen && namespaceId ? (
          <ResendPanel
            event={event}
            namespaceId={namespaceId}
            onCopyCurl={curl ? () => copy("curl", curl.command) : null}
            curlLabel={label("curl", "Copy as cURL")}
            onClose={() => setIsResendOpen(false)}
          />
        ) : null}
        {sections.map((section) => (
          <div key={section.id} data-section={section.id}>
            <h3 className="mb-1.5 text-[11px] font-semibold tracking-wider text-zinc-400 uppercase">{section.title}</h3>
            <div className="space-y-2">{section.content}</div>
          </div>
        ))}
      </div>
    </section>
  );
}

/** One entry of the detail's action bar: a button, or a menu of them. */
type DetailButton = { key: string; label: string; run: () => void };
type DetailAction = DetailButton | { key: string; label: string; items: DetailButton[] };

function ActionButton({ onClick, children }: { onClick: () => void; children: ReactNode }) {
  return (
    <button
      type="button"
      onClick={onClick}
      className="rounded-md border border-zinc-700 bg-zinc-800 px-2.5 py-1 text-xs font-medium text-zinc-100 hover:bg-zinc-700"
    >
      {children}
    </button>
  );
}

/** Actions folded under one button (the other copy formats), so the bar stays short on a phone. */
function ActionMenu({ label, items }: { label: string; items: DetailButton[] }) {
  const [isOpen, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!isOpen) return;
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !box.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("pointerdown", close);
      document.removeEventListener("keydown", close);
    };
  }, [isOpen]);
  return (
    <div ref={box} className="relative">
      <button
        type="button"
        aria-expanded={isOpen}
        onClick={() => setOpen(!isOpen)}
        className="rounded-md border border-zinc-700 bg-zinc-800 px-2.5 py-1 text-xs font-medium text-zinc-100 hover:bg-zinc-700"
      >
        {label}
      </button>
      {isOpen ? (
        <ul
          aria-label={label.replace(/[…▾\s]+$/, "")}
          className="absolute left-0 z-20 mt-1 min-w-44 rounded-md border border-zinc-700 bg-zinc-800 py-1 shadow-lg"
        >
          {items.map((item) => (
            <li key={item.key}>
              <button
                type="button"
                onClick={item.run}
                className="block w-full px-3 py-1 text-left text-xs whitespace-nowrap text-zinc-100 hover:bg-zinc-700"
              >
                {item.label}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function Subsection({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div>
      <h4 className="mb-1 text-xs font-medium text-zinc-300">{title}</h4>
      <div className="space-y-2">{children}</div>
    </div>
  );
}

/** The protocol as read: "HTTP/2 · gRPC · TLS decrypted". */
export function protocolName(event: TracedEvent): string {
  if (isDbCall(event)) return dbSystemName(event.db_system);
  const parts = [event.protocol === "http" ? `HTTP/${event.http_version || "?"}` : event.protocol.toUpperCase()];
  if (/^application\/grpc/i.test(event.http_req_content_type ?? "")) parts.push("gRPC");
  if (isWebSocketHandshake(event)) parts.push("WebSocket");
  if (event.tags?.tls === "decrypted") parts.push("TLS decrypted");
  else if (event.tags?.tls === "not decrypted") parts.push("TLS not decrypted");
  return parts.join(" · ");
}

/** DevTools' General: what the exchange was, between whom, how big, and which process. Empty fields are left out. */
function generalRows(event: TracedEvent, zone: ReturnType<typeof useTimeZone>[0]): Array<[string, string]> {
  const isHttp = event.protocol === "http";
  const rows: Array<[string, string]> = [
    ["URL", isHttp && !isTunnel(event) ? eventUrl(event) : displayUrl(event)],
    ["method", isHttp ? event.http_req_method : ""],
    ["status", isHttp && event.http_resp_status_code ? String(event.http_resp_status_code) : isHttp ? "no response" : ""],
    ["protocol", protocolName(event)],
    // The remote side from the program's point of view: the server it called, or the client it served.
    ["remote address", event.http_is_outgoing ? event.http_server_addr : event.http_client_addr],
    ["local address", event.http_is_outgoing ? event.http_client_addr : event.http_server_addr],
    ["request body", isHttp ? bodySize(event.http_req_body_size_bytes_wire, event.http_req_content_type ?? "") : ""],
    ["response body", isHttp ? bodySize(event.http_resp_body_size_bytes_wire, event.http_resp_content_type ?? "") : ""],
    ["on the wire", `${formatBytes(event.bytes_sent)} sent, ${formatBytes(event.bytes_received)} received`],
    ["started", formatFullTime(event.time, zone)],
    ["duration", formatDuration(event.http_duration)],
    ["service", event.service],
    ["process", event.process_executable_name ? `${event.process_executable_name} (pid ${event.process_id})` : ""],
  ];
  return rows.filter(([, value]) => value !== "");
}

function bodySize(wire: number, contentType: string): string {
  if (wire <= 0) return "none";
  return contentType ? `${formatBytes(wire)} · ${contentType}` : formatBytes(wire);
}

/** The response as HTTP/1 text: status line, headers, a blank line and the body (binary bodies as base64). */
export function responseText(event: TracedEvent): string {
  const status = `HTTP/${event.http_version || "1.1"} ${event.http_resp_status_code || ""}`.trim();
  const bytes = decodeBase64(event.http_resp_body ?? "");
  const text = bytes.length === 0 ? "" : (asText(bytes) ?? `(binary, base64) ${event.http_resp_body}`);
  return `${[status, rawHeaders(event.http_resp_headers ?? [])].filter(Boolean).join("\n")}\n\n${text}`;
}

/**
 * How the connection's TLS was seen: "TLS decrypted · h2 · api.example.test", or "TLS not decrypted: mutual TLS
 * (api.example.test)"; null for plaintext.
 */
export function tlsSummary(event: TracedEvent): string | null {
  const tls = event.tags?.tls;
  if (tls === "decrypted") return ["TLS decrypted", event.tags.tls_alpn, event.tls_server_name].filter(Boolean).join(" · ");
  if (tls === "not decrypted") {
    const name = event.tls_server_name ? ` (${event.tls_server_name})` : "";
    return `TLS not decrypted: ${event.tags.tls_reason || "unknown reason"}${name}`;
  }
  return null;
}

/** The exchange's context as key/value rows; empty fields are left out. */
function Facts({ event }: { event: TracedEvent }) {
  const rows: Array<[string, string]> = [
    ["host", event.hostname],
    ["command line", event.process_command_line],
    ["user", event.process_user],
    ["X-Forwarded-For", event.http_req_x_forwarded_for],
    ["request encoding", [event.http_req_content_encoding, event.http_req_transfer_encoding].filter(Boolean).join(", ")],
    ["response encoding", [event.http_resp_content_encoding, event.http_resp_transfer_encoding].filter(Boolean).join(", ")],
    ["Kubernetes", [event.kubernetes_namespace, event.gke_cluster_name, event.gke_node_name].filter(Boolean).join(" / ")],
    ["event id", event.event_id],
    ...Object.entries(event.tags ?? {})
      .filter(([k]) => !tlsTags.has(k))
      .map(([k, v]) => [tagLabel(k), tagValue(k, String(v))] as [string, string]),
  ];
  return <KeyValueTable label="Details" rows={rows.filter(([, value]) => value !== "")} />;
}

/** The tags the TLS section shows (left out of the details' tag rows). */
const tlsTags = new Set(["tls", "tls_alpn", "tls_reason", "tls_detail"]);

/** Whether and how the connection's TLS was read: server name, negotiated protocol, decrypted or why not. */
function TlsFacts({ event }: { event: TracedEvent }) {
  const tags = event.tags ?? {};
  const state =
    tags.tls === "decrypted" ? "decrypted" : tags.tls === "not decrypted" ? `not decrypted: ${tags.tls_reason || "no reason given"}` : "";
  const rows: Array<[string, string]> = [
    ["server name", event.tls_server_name],
    ["protocol (ALPN)", tags.tls_alpn ?? ""],
    ["capture", state],
    ["detail", tags.tls_detail ?? ""],
    ["handshake", event.timing_tls >= 0 ? formatDuration(event.timing_tls) : ""],
  ];
  return <KeyValueTable label="TLS" rows={rows.filter(([, value]) => value !== "")} isProse />;
}

function EventLine({
  event,
  onOpen,
  offsetUs,
  parentDuration,
}: {
  event: TracedEvent;
  onOpen?: (event: TracedEvent) => void;
  offsetUs?: number;
  parentDuration?: number;
}) {
  const total = Math.max(parentDuration ?? 0, 1);
  // Clocks of two processes can disagree a little: keep the bar inside the parent's span.
  const left = Math.min(98, Math.max(0, ((offsetUs ?? 0) / total) * 100));
  const width = Math.min(100 - left, (event.http_duration / total) * 100);
  return (
    <button
      type="button"
      onClick={() => onOpen?.(event)}
      className="grid w-full grid-cols-[3.5rem_3rem_1fr_5rem] items-center gap-2 rounded px-1 py-0.5 text-left font-mono text-xs hover:bg-zinc-800"
    >
      <span className="font-semibold">{event.http_req_method}</span>
      <span className={statusClass(event.http_resp_status_code)}>{event.http_resp_status_code || "—"}</span>
      <span className="min-w-0">
        <MiddleCutText text={event.protocol === "tcp" ? displayUrl(event) : eventUrl(event)} />
        {offsetUs !== undefined ? (
          <span className="relative mt-0.5 block h-1 rounded bg-zinc-800">
            <span className="absolute inset-y-0 rounded bg-sky-500" style={{ left: `${left}%`, width: `max(2px, ${width}%)` }} />
          </span>
        ) : null}
      </span>
      <span className="text-right text-zinc-400">{formatDuration(event.http_duration)}</span>
    </button>
  );
}
