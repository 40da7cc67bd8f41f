import { afterEach, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { EventList } from "~/ui/live/event-list.tsx";
import { EventStore } from "~/ui/live/event-store.ts";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { webSocketEvents } from "../support/websocket-events.ts";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

const T0 = 1_763_700_000_000_000;
const conversation = () =>
  webSocketEvents(T0, [
    { ws_direction: "client", ws_opcode: "text", ws_message: '{"op":"subscribe","topic":"prices"}', ws_size: 35 },
    { ws_direction: "server", ws_opcode: "text", ws_message: "<b>not markup</b>", ws_size: 17, ws_is_compressed: true },
    { ws_direction: "server", ws_opcode: "binary", ws_payload: btoa("\u0000\u0001AB"), ws_size: 4 },
    {
      ws_direction: "client",
      ws_opcode: "close",
      ws_close_code: 1000,
      ws_message: "done",
      ws_client_messages: 2,
      ws_server_messages: 2,
      ws_dropped: 5,
      bytes_sent: 61,
      bytes_received: 33,
    },
  ]);

test("a handshake's detail lists its messages: time since open, direction, preview, size; totals, drops and the close", () => {
  const { handshake, messages } = conversation();
  const outbound = makeEvent({ parent_event_id: handshake.event_id, http_is_outgoing: true, http_req_path: "/auth" });
  render(<RequestDetail event={handshake} outboundCalls={[...messages.toReversed(), outbound]} />);
  expect(screen.getByTestId("ws-summary").textContent).toBe("↑ 2 from the client (61 B) · ↓ 2 from the server (33 B) · closed 1000 done");
  expect(screen.getByTestId("ws-dropped").textContent).toContain("5 messages counted but not recorded");
  const list = screen.getByRole("list", { name: "WebSocket messages" });
  const rows = within(list).getAllByRole("listitem");
  expect(rows.map((r) => r.textContent)).toEqual([
    '+1.0ms↑{"op":"subscribe","topic":"prices"}35 B',
    "+2.0ms↓<b>not markup</b>17 B",
    "+3.0ms↓00 01 41 424 B",
    "+4.0ms↑close 1000 done4 B",
  ]);
  expect(within(rows[0]!).getByRole("img").getAttribute("aria-label")).toBe("from the client");
  // The other children are still outbound calls; messages are not.
  const calls = screen.getByRole("list", { name: "Outbound calls" });
  expect(within(calls).getAllByRole("listitem")).toHaveLength(1);
});

test("a message opens to read as pretty JSON, text or hex; captured markup stays text", () => {
  const { handshake, messages } = conversation();
  render(<RequestDetail event={handshake} outboundCalls={messages} />);
  const list = screen.getByRole("list", { name: "WebSocket messages" });
  const [json, markup, binary] = within(list).getAllByRole("button");
  fireEvent.click(json!);
  const body = screen.getByTestId("ws-message-body");
  expect(within(body).getByRole("radio", { name: "JSON" }).getAttribute("aria-checked")).toBe("true");
  expect(body.querySelector("pre")?.textContent).toBe('{\n  "op": "subscribe",\n  "topic": "prices"\n}');
  fireEvent.click(within(body).getByRole("radio", { name: "Text" }));
  expect(body.querySelector("pre")?.textContent).toBe('{"op":"subscribe","topic":"prices"}');
  fireEvent.click(within(body).getByRole("radio", { name: "Hex" }));
  expect(within(body).getByTestId("hex").textContent).toContain("7b 22 6f 70");

  fireEvent.click(markup!);
  const second = screen.getByTestId("ws-message-body");
  expect(second.textContent).toContain("compressed");
  expect(second.querySelector("b")).toBeNull();
  expect(second.querySelector("pre")?.textContent).toBe("<b>not markup</b>");

  fireEvent.click(binary!);
  const third = screen.getByTestId("ws-message-body");
  expect(within(third).queryByRole("radio", { name: "JSON" })).toBeNull();
  expect(within(third).getByTestId("hex").textContent).toContain("00 01 41 42");
});

test("a message's own detail: its payload and the WebSocket it belongs to", () => {
  const { handshake, messages } = conversation();
  let opened = "";
  render(<RequestDetail event={messages[0]!} parent={handshake} onOpen={(e) => (opened = e.event_id)} />);
  expect(screen.getByTestId("detail-url").textContent).toBe("http://localhost:8080/chat");
  expect(screen.getByText("WebSocket text")).toBeTruthy();
  expect(screen.getByTestId("ws-message-body").querySelector("pre")?.textContent).toContain('"topic": "prices"');
  expect(screen.queryByRole("list", { name: "Timing" })).toBeNull();
  fireEvent.click(screen.getByText("Message of the WebSocket").parentElement!.querySelector("button")!);
  expect(opened).toBe(handshake.event_id);
});

test("the live list shows messages with direction arrows and a preview; the store's toggle hides them", () => {
  const { handshake, messages } = conversation();
  const store = new EventStore();
  store.add([makeEvent({ time: T0 - 1000, http_req_path: "/before" })]);
  expect(store.hasMessages).toBe(false);
  store.add([handshake, ...messages]);
  expect(store.hasMessages).toBe(true);
  render(<EventList events={store.shown} version={store.version} selectedId={null} onSelect={() => {}} />);
  const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
  expect(rows.map((r) => r.getAttribute("data-ws-direction"))).toEqual(["client", "server", "server", "client", null, null]);
  expect(rows[3]!.textContent).toContain('{"op":"subscribe","topic":"prices"}');
  expect(within(rows[3]!).getByRole("img").getAttribute("aria-label")).toBe("from the client");
  store.setHidingMessages(true);
  expect(store.shown.map((e) => e.http_req_path)).toEqual(["/before", "/chat"]);
  store.add([makeEvent({ time: T0 + 9000 }), { ...messages[0]!, event_id: crypto.randomUUID(), time: T0 + 10_000 }]);
  expect(store.shown).toHaveLength(3);
  expect(store.children(handshake.event_id)).toHaveLength(5);
  store.setHidingMessages(false);
  expect(store.shown).toHaveLength(8);
});
