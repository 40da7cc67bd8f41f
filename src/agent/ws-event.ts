import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { baseEvent, type EventContext, type ProcessInfo } from "./event.ts";
import { Opcode, type WsMessage, type WsTotals } from "./parse/websocket.ts";
import { redactJsonText } from "./redact.ts";
import type { ConnectionInfo } from "./relay/observer.ts";

/** One recorded WebSocket message, with what it needs to become an event. */
export type WsWork = {
  message: WsMessage;
  /** On the connection's last message. */
  totals?: WsTotals;
  /** The handshake's event: the 101, or HTTP/2's CONNECT. */
  parentEventId: string;
  /** "1.1" or "2": what the WebSocket runs over. */
  httpVersion: string;
  eventId: string;
};

const opcodeNames: Record<number, string> = {
  [Opcode.Text]: "text",
  [Opcode.Binary]: "binary",
  [Opcode.Close]: "close",
  [Opcode.Ping]: "ping",
  [Opcode.Pong]: "pong",
};

const noBytes = new Uint8Array(0);

/**
 * A WebSocket message -> the published event: text as text (JSON redacted by the name rule, as bodies are), a close's
 * code and reason, anything else as bytes; the connection's totals on its last event.
 */
export function buildWsEvent(work: WsWork, conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): CapturedEvent {
  const { message: m, totals } = work;
  const e = baseEvent(conn, proc, ctx);
  e.protocol = "ws";
  e.event_id = work.eventId;
  e.parent_event_id = work.parentEventId;
  e.time = Math.round(m.endAt);
  e.http_version = work.httpVersion;
  e.http_duration = Math.max(0, Math.round(m.endAt - m.startAt));
  e.ws_direction = m.fromClient === null ? "" : m.fromClient ? "client" : "server";
  e.ws_opcode = opcodeNames[m.opcode] ?? String(m.opcode);
  e.ws_wire_size = m.wireBytes;
  e.ws_size = m.size;
  e.ws_is_compressed = m.isCompressed;
  e.ws_payload_truncated = m.isTruncated;
  const payload = m.payload;
  if (m.opcode === Opcode.Text) e.ws_message = messageText(payload, m.isTruncated, ctx);
  else if (m.opcode === Opcode.Close) {
    e.ws_close_code = payload.length >= 2 ? (payload[0]! << 8) | payload[1]! : 1005;
    e.ws_message = payload.length > 2 ? utf8(payload.subarray(2), false) : "";
    e.ws_payload = noBytes;
  } else e.ws_payload = payload;
  if (m.notInflated) e.tags.ws_not_inflated = m.notInflated;
  if (conn.tls) {
    e.tls_server_name = conn.tls.serverName;
    e.tags.tls = "decrypted";
  }
  if (totals) {
    e.ws_client_messages = totals.clientMessages;
    e.ws_server_messages = totals.serverMessages;
    e.ws_dropped = totals.dropped;
    e.bytes_sent = totals.clientBytes;
    e.bytes_received = totals.serverBytes;
    e.http_duration = Math.max(0, Math.round(m.endAt - totals.openedAt));
    if (totals.ending) e.tags.ws_ending = totals.ending;
  }
  return e;
}

function messageText(payload: Uint8Array, isTruncated: boolean, ctx: EventContext): string {
  if (payload.length === 0) return "";
  const text = utf8(payload, isTruncated);
  if (ctx.redact === "keep" || !looksLikeJson(text)) return text;
  return redactJsonText(text, ctx.redact);
}

function looksLikeJson(text: string): boolean {
  for (let i = 0; i < text.length && i < 64; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) return true;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}

/** UTF-8 text; a payload cut in the middle of a character loses that character rather than showing U+FFFD. */
function utf8(bytes: Uint8Array, isCut: boolean): string {
  let end = bytes.length;
  if (isCut) {
    // Step back over a trailing sequence the cut left incomplete.
    let k = end - 1;
    while (k >= 0 && k >= end - 3 && (bytes[k]! & 0xc0) === 0x80) k--;
    if (k >= 0) {
      const lead = bytes[k]!;
      const needed = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (end - k < needed) end = k;
    }
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, end).toString("utf8");
}
