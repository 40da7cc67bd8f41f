import { randomUUID } from "node:crypto";
import { neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent } from "./event-factory.ts";

type Message = Partial<TracedEvent> & Pick<TracedEvent, "ws_direction" | "ws_opcode">;

/**
 * A WebSocket as the agent publishes it: the handshake (a 101 tagged upgrade=websocket) and its messages, each a
 * millisecond after the one before, their parent the handshake. A close given `ws_client_messages` etc. carries the
 * connection's totals, as the agent's last event does.
 */
export function webSocketEvents(
  startMicros: number,
  messages: readonly Message[],
  handshake: Partial<TracedEvent> = {},
): { handshake: TracedEvent; messages: TracedEvent[] } {
  const hs = tracedEvent({
    time: startMicros,
    http_req_method: "GET",
    http_req_path: "/chat",
    http_req_headers: [
      ["Host", "localhost:8080"],
      ["Upgrade", "websocket"],
      ["Connection", "Upgrade"],
    ],
    http_resp_status_code: 101,
    http_resp_headers: [
      ["Upgrade", "websocket"],
      ["Connection", "Upgrade"],
    ],
    http_resp_body: "",
    http_resp_body_size_bytes_wire: 0,
    http_resp_content_type: "",
    http_resp_content_length: -1,
    tags: { upgrade: "websocket" },
    ...handshake,
  });
  const out = messages.map((m, i) => {
    const text = m.ws_message ?? "";
    return {
      ...neutralEvent(),
      time: startMicros + (i + 1) * 1000,
      event_id: randomUUID(),
      parent_event_id: hs.event_id,
      service: hs.service,
      hostname: hs.hostname,
      process_id: hs.process_id,
      process_executable_name: hs.process_executable_name,
      protocol: "ws",
      http_version: hs.http_version,
      http_client_addr: hs.http_client_addr,
      http_server_addr: hs.http_server_addr,
      ws_size: Buffer.byteLength(text) + Buffer.from(m.ws_payload ?? "", "base64").length,
      ws_wire_size: Buffer.byteLength(text) + 6,
      ...m,
    } satisfies TracedEvent;
  });
  return { handshake: hs, messages: out };
}
