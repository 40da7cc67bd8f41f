import type { TracedEvent } from "~/lib/protocol/event.ts";

/**
 * WebSocket messages as the dashboard, the HAR and `tapscope query` read them: events of protocol "ws" whose parent is
 * their connection's handshake (an HTTP/1.1 101, or HTTP/2's extended CONNECT), the last one a close carrying the
 * connection's totals.
 */
export function isWebSocketHandshake(event: Partial<Pick<TracedEvent, "protocol" | "tags">>): boolean {
  return event.protocol === "http" && event.tags?.upgrade === "websocket";
}

export function isWebSocketMessage(event: Partial<Pick<TracedEvent, "protocol">>): boolean {
  return event.protocol === "ws";
}

/** The WebSocket messages among `events`, by their handshake's event id, each list in time order. */
export function messagesByHandshake(events: Iterable<TracedEvent>): Map<string, TracedEvent[]> {
  const out = new Map<string, TracedEvent[]>();
  for (const e of events) {
    if (!isWebSocketMessage(e) || !e.parent_event_id) continue;
    const list = out.get(e.parent_event_id);
    if (list) list.push(e);
    else out.set(e.parent_event_id, [e]);
  }
  for (const list of out.values()) list.sort((a, b) => a.time - b.time);
  return out;
}

/** What a connection's messages add up to: counts and frame bytes each way, as recorded, and its close. */
export type WebSocketSummary = {
  clientMessages: number;
  serverMessages: number;
  clientBytes: number;
  serverBytes: number;
  /** Messages the per-connection budget left out (counted by the agent on the last event). */
  dropped: number;
  /** The last close seen: its code (1006: ended without one) and reason; null while neither side has sent one. */
  close: { code: number; reason: string } | null;
  /** How the connection ended when it did not close cleanly (the agent's words), else "". */
  ending: string;
};

/**
 * The summary of a connection's messages (time order). Once it has ended, its last event carries the agent's counts
 * of everything it saw (recorded or not); while it is open, what was recorded so far is counted.
 */
export function summarizeMessages(messages: readonly TracedEvent[]): WebSocketSummary {
  const last = messages.at(-1);
  // The last event counts itself when it is a close that was sent; one made up for a connection that ended without
  // a close was sent by nobody.
  const isEnded =
    last !== undefined && last.ws_opcode === "close" && (last.ws_direction === "" || last.ws_client_messages + last.ws_server_messages > 0);
  if (isEnded && last) {
    return {
      clientMessages: last.ws_client_messages,
      serverMessages: last.ws_server_messages,
      clientBytes: last.bytes_sent,
      serverBytes: last.bytes_received,
      dropped: last.ws_dropped,
      close: { code: last.ws_close_code, reason: last.ws_message },
      ending: last.tags?.ws_ending ?? "",
    };
  }
  const summary: WebSocketSummary = {
    clientMessages: 0,
    serverMessages: 0,
    clientBytes: 0,
    serverBytes: 0,
    dropped: 0,
    close: null,
    ending: "",
  };
  for (const m of messages) {
    if (m.ws_direction === "client") {
      summary.clientMessages++;
      summary.clientBytes += m.ws_wire_size;
    } else if (m.ws_direction === "server") {
      summary.serverMessages++;
      summary.serverBytes += m.ws_wire_size;
    }
    if (m.ws_opcode === "close") summary.close = { code: m.ws_close_code, reason: m.ws_message };
  }
  return summary;
}
