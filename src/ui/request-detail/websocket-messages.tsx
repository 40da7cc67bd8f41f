import { useMemo, useState } from "react";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { summarizeMessages } from "~/lib/websocket-messages.ts";
import { asText, decodeBase64, hexRows } from "./body.ts";

/** Rows rendered at first; the rest come a page at a time (a socket can have thousands of recorded messages). */
const PAGE = 200;
const PREVIEW_CHARS = 120;
const MAX_HEX_ROWS = 4096;

type View = "text" | "json" | "hex";

/** Who sent a message, as an arrow and in words: up from the client, down from the server (as DevTools draws them). */
export function directionOf(message: Partial<Pick<TracedEvent, "ws_direction">>): { arrow: string; label: string; className: string } {
  if (message.ws_direction === "client") return { arrow: "↑", label: "from the client", className: "text-emerald-400" };
  if (message.ws_direction === "server") return { arrow: "↓", label: "from the server", className: "text-sky-400" };
  return { arrow: "·", label: "ended", className: "text-zinc-500" };
}

/** A message's payload as bytes: a text message's or a close's text, anything else's captured bytes. */
function payloadBytes(m: TracedEvent): Uint8Array {
  if (m.ws_opcode === "text" || m.ws_opcode === "close") return new TextEncoder().encode(m.ws_message);
  return decodeBase64(m.ws_payload);
}

/** One line of a message for a list: its text, a close's code and reason, or a binary payload as hex. */
export function messagePreview(m: TracedEvent): string {
  if (m.ws_opcode === "close") return `close ${m.ws_close_code}${m.ws_message ? ` ${m.ws_message}` : ""}`;
  if (m.ws_opcode === "text") return oneLine(m.ws_message);
  const bytes = decodeBase64(m.ws_payload);
  const hex = Array.from(bytes.subarray(0, 24), (b) => b.toString(16).padStart(2, "0")).join(" ");
  const label = m.ws_opcode === "binary" ? "" : `${m.ws_opcode} `;
  return `${label}${hex}${bytes.length > 24 ? " …" : ""}`.trim() || m.ws_opcode;
}

function oneLine(text: string): string {
  const line = text.slice(0, PREVIEW_CHARS * 2).replace(/\s+/g, " ");
  return line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS)}…` : line;
}

/**
 * A WebSocket's messages in the handshake's detail, as DevTools' Messages tab shows them: the totals and the close,
 * then one row a message (time since the connection opened, direction, size, preview); a row opens to read the
 * message as text, pretty JSON or hex. Captured payloads are only ever text nodes.
 */
export function WebSocketMessages({ messages, openedAt }: { messages: readonly TracedEvent[]; openedAt: number }) {
  const sorted = useMemo(() => [...messages].sort((a, b) => a.time - b.time), [messages]);
  const summary = useMemo(() => summarizeMessages(sorted), [sorted]);
  const [limit, setLimit] = useState(PAGE);
  const [openId, setOpenId] = useState<string | null>(null);
  const shown = sorted.slice(0, limit);

  return (
    <div className="space-y-2">
      <p className="text-xs text-zinc-300" data-testid="ws-summary">
        <span className="text-emerald-400">↑</span> {summary.clientMessages.toLocaleString("en-US")} from the client (
        {formatBytes(summary.clientBytes)}) · <span className="text-sky-400">↓</span> {summary.serverMessages.toLocaleString("en-US")} from
        the server ({formatBytes(summary.serverBytes)})
        {summary.close ? ` · closed ${summary.close.code}${summary.close.reason ? ` ${summary.close.reason}` : ""}` : " · open"}
      </p>
      {summary.ending ? <p className="text-xs text-amber-400">{summary.ending}</p> : null}
      {summary.dropped > 0 ? (
        <p className="text-xs text-amber-400" data-testid="ws-dropped">
          {summary.dropped.toLocaleString("en-US")} messages counted but not recorded (over the per-connection message budget)
        </p>
      ) : null}
      {sorted.length === 0 ? (
        <p className="text-xs text-zinc-500">No messages were recorded on this connection.</p>
      ) : (
        <ul aria-label="WebSocket messages" className="divide-y divide-zinc-800 rounded-md border border-zinc-800">
          {shown.map((m) => (
            <MessageRow
              key={m.event_id}
              message={m}
              sinceOpen={m.time - openedAt}
              isOpen={openId === m.event_id}
              onToggle={() => setOpenId((id) => (id === m.event_id ? null : m.event_id))}
            />
          ))}
        </ul>
      )}
      {sorted.length > limit ? (
        <button
          type="button"
          onClick={() => setLimit((n) => n + PAGE)}
          className="rounded-md border border-zinc-700 bg-zinc-800 px-2.5 py-1 text-xs text-zinc-100 hover:bg-zinc-700"
        >
          Show {Math.min(PAGE, sorted.length - limit)} more of {(sorted.length - limit).toLocaleString("en-US")}
        </button>
      ) : null}
    </div>
  );
}

function MessageRow({
  message: m,
  sinceOpen,
  isOpen,
  onToggle,
}: {
  message: TracedEvent;
  sinceOpen: number;
  isOpen: boolean;
  onToggle: () => void;
}) {
  const direction = directionOf(m);
  const size = m.ws_size >= 0 ? m.ws_size : m.ws_wire_size;
  return (
    <li data-ws-direction={m.ws_direction} data-ws-opcode={m.ws_opcode}>
      <button
        type="button"
        aria-expanded={isOpen}
        onClick={onToggle}
        className="grid w-full grid-cols-[4.5rem_1rem_minmax(0,1fr)_4rem] items-center gap-2 px-2 py-1 text-left font-mono text-xs hover:bg-zinc-800"
      >
        <span className="text-zinc-500 tabular-nums">+{formatDuration(Math.max(0, sinceOpen))}</span>
        <span role="img" aria-label={direction.label} title={direction.label} className={direction.className}>
          {direction.arrow}
        </span>
        <span className={`truncate ${m.ws_opcode === "text" ? "text-zinc-200" : "text-zinc-400"}`}>{messagePreview(m)}</span>
        <span className="text-right text-zinc-400 tabular-nums">{formatBytes(size)}</span>
      </button>
      {isOpen ? <MessageBody message={m} /> : null}
    </li>
  );
}

/** One message opened: its facts, and its payload as text, pretty JSON or hex. */
export function MessageBody({ message: m }: { message: TracedEvent }) {
  const bytes = useMemo(() => payloadBytes(m), [m]);
  const text = useMemo(() => (m.ws_opcode === "text" || m.ws_opcode === "close" ? m.ws_message : asText(bytes)), [m, bytes]);
  const json = useMemo(() => prettyJson(text), [text]);
  const views: View[] = [...(text !== null ? (["text"] as const) : []), ...(json !== null ? (["json"] as const) : []), "hex"];
  const [view, setView] = useState<View>(json !== null ? "json" : text !== null ? "text" : "hex");
  const facts = [
    m.ws_opcode,
    m.ws_size >= 0 ? `${formatBytes(m.ws_size)}` : "not inflated",
    `${formatBytes(m.ws_wire_size)} on the wire`,
    m.ws_is_compressed ? "compressed" : "",
  ].filter(Boolean);
  return (
    <div className="space-y-1.5 border-t border-zinc-800 bg-zinc-950/60 p-2" data-testid="ws-message-body">
      <div className="flex flex-wrap items-center gap-2 text-xs text-zinc-400">
        <span>{facts.join(" · ")}</span>
        {bytes.length > 0 ? (
          <span role="radiogroup" aria-label="Show as" className="ml-auto flex gap-1">
            {views.map((v) => (
              // biome-ignore lint/a11y/useSemanticElements: a segmented control, styled as buttons
              <button
                key={v}
                type="button"
                role="radio"
                aria-checked={view === v}
                onClick={() => setView(v)}
                className={`rounded px-1.5 py-0.5 ${view === v ? "bg-zinc-700 text-zinc-100" : "text-zinc-400 hover:bg-zinc-800"}`}
              >
                {v === "json" ? "JSON" : v === "hex" ? "Hex" : "Text"}
              </button>
            ))}
          </span>
        ) : null}
      </div>
      {m.ws_payload_truncated ? (
        <p className="text-xs text-amber-400" data-testid="truncated">
          Truncated: showing the first {formatBytes(bytes.length)} of {formatBytes(m.ws_size)}
        </p>
      ) : null}
      {m.tags?.ws_not_inflated ? <p className="text-xs text-amber-400">Not inflated: {m.tags.ws_not_inflated}</p> : null}
      {bytes.length === 0 ? (
        <p className="text-xs text-zinc-500">No payload</p>
      ) : view === "hex" ? (
        <Hex bytes={bytes} />
      ) : (
        <pre className="max-h-80 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs break-all whitespace-pre-wrap text-zinc-200">
          {view === "json" ? json : text}
        </pre>
      )}
    </div>
  );
}

function prettyJson(text: string | null): string | null {
  const trimmed = text?.trimStart() ?? "";
  if (!text || !(trimmed.startsWith("{") || trimmed.startsWith("["))) return null;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

function Hex({ bytes }: { bytes: Uint8Array }) {
  const rows = useMemo(() => hexRows(bytes.subarray(0, MAX_HEX_ROWS * 16)), [bytes]);
  return (
    <div className="max-h-80 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs leading-5" data-testid="hex">
      {rows.map((row) => (
        <div key={row.offset} className="flex gap-4 whitespace-pre">
          <span className="text-zinc-500">{row.offset}</span>
          <span className="text-zinc-200">{row.hex}</span>
          <span className="text-zinc-400">{row.ascii}</span>
        </div>
      ))}
    </div>
  );
}
