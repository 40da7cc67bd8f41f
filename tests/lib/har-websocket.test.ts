import { expect, test } from "bun:test";
import {
  harEntryIds,
  harEntryText,
  harPageIds,
  harRowColumns,
  harStream,
  harWebSocketDataChars,
  inWriteOrder,
  toHarLog,
} from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { webSocketEvents } from "../support/websocket-events.ts";

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0) * 1000;

const chat = () =>
  webSocketEvents(T0, [
    { ws_direction: "client", ws_opcode: "text", ws_message: '{"say":"hello"}' },
    { ws_direction: "server", ws_opcode: "text", ws_message: "héllo back" },
    { ws_direction: "client", ws_opcode: "ping", ws_payload: "" },
    { ws_direction: "server", ws_opcode: "pong", ws_payload: "" },
    { ws_direction: "server", ws_opcode: "binary", ws_payload: Buffer.from([0, 1, 254, 255]).toString("base64") },
    {
      ws_direction: "client",
      ws_opcode: "close",
      ws_close_code: 1000,
      ws_message: "bye",
      ws_client_messages: 3,
      ws_server_messages: 3,
      ws_dropped: 2,
      bytes_sent: 40,
      bytes_received: 30,
    },
  ]);

test("a handshake's entry carries its data messages as DevTools exports them, and its close and totals in the comment", () => {
  const { handshake, messages } = chat();
  const other = makeEvent({ time: T0 + 50_000, http_req_path: "/other" });
  // Messages arrive in any order among other events; they are no entries of their own.
  const har = toHarLog([messages[3]!, other, ...messages.toReversed(), handshake].filter((e, i, all) => all.indexOf(e) === i));
  expect(har.log.entries.map((e) => new URL(e.request.url).pathname)).toEqual(["/chat", "/other"]);
  const entry = har.log.entries[0]!;
  expect(entry._resourceType).toBe("websocket");
  expect(entry.response.status).toBe(101);
  expect(entry._webSocketMessages).toEqual([
    { type: "send", time: (T0 + 1000) / 1e6, opcode: 1, data: '{"say":"hello"}' },
    { type: "receive", time: (T0 + 2000) / 1e6, opcode: 1, data: "héllo back" },
    { type: "receive", time: (T0 + 5000) / 1e6, opcode: 2, data: "AAH+/w==" },
  ]);
  expect(entry.comment).toBe(
    "WebSocket: 3 messages from the client, 3 from the server; 2 counted but not recorded (the message budget); closed 1000 bye",
  );
  expect(har.log.entries[1]!._webSocketMessages).toBeUndefined();
});

test("a connection still open, or cut without a close, says so", () => {
  const open = webSocketEvents(T0, [{ ws_direction: "client", ws_opcode: "text", ws_message: "x", ws_payload_truncated: true }]);
  const [openEntry] = toHarLog([open.handshake, ...open.messages]).log.entries;
  expect(openEntry!.comment).toBe("WebSocket: 1 messages from the client, 0 from the server; payloads cut to the capture limit");
  const cut = webSocketEvents(T0, [
    { ws_direction: "server", ws_opcode: "text", ws_message: "x" },
    {
      ws_direction: "",
      ws_opcode: "close",
      ws_close_code: 1006,
      ws_server_messages: 1,
      tags: { ws_ending: "the connection ended without a close" },
    },
  ]);
  const [cutEntry] = toHarLog([cut.handshake, ...cut.messages]).log.entries;
  expect(cutEntry!.comment).toBe(
    "WebSocket: 0 messages from the client, 1 from the server; closed 1006; the connection ended without a close",
  );
  // A plain handshake with no messages recorded still is a WebSocket, with an empty list.
  expect(toHarLog([open.handshake]).log.entries[0]!._webSocketMessages).toEqual([]);
});

test("a query's rows become entries: a message stands for its handshake, once, which is a page of its own", () => {
  const { handshake, messages } = chat();
  const a = makeEvent({ time: T0 - 10 });
  const b = makeEvent({ time: T0 + 99_000 });
  const row = (e: TracedEvent) => Object.fromEntries([...harRowColumns, "time", "event_id"].map((c) => [c, e[c as keyof TracedEvent]]));
  // Oldest first: a filter on ws.message selects only messages; the HAR shows their connection.
  const rows = [a, messages[0]!, messages[1]!, handshake, b, messages[4]!].map(row);
  const { ids, handshakes } = harEntryIds(rows);
  expect(ids).toEqual([a.event_id, handshake.event_id, b.event_id]);
  expect([...handshakes]).toEqual([handshake.event_id]);
  const pages = [...harPageIds(ids, { isAlone: (i) => handshakes.has(ids[i]!) })].map((p) => p.ids);
  expect(pages).toEqual([[a.event_id], [handshake.event_id], [b.event_id]]);
});

test("a handshake's page written as text (the HAR writer's thread) gives the same entry as the events", async () => {
  const { handshake, messages } = chat();
  const page = [handshake, ...messages];
  const fromEvents = await new Response(harStream([page].values())).text();
  const fromTexts = await new Response(harStream([{ texts: inWriteOrder(page).map((item) => harEntryText(item)) }].values())).text();
  expect(fromTexts).toBe(fromEvents);
  expect(JSON.parse(fromEvents).log.entries[0]._webSocketMessages).toHaveLength(3);
});

test("an entry carries messages up to its data cap; the comment counts those left out", () => {
  const big = "x".repeat(harWebSocketDataChars / 4 + 1);
  const { handshake, messages } = webSocketEvents(
    T0,
    Array.from({ length: 6 }, () => ({ ws_direction: "server" as const, ws_opcode: "text" as const, ws_message: big })),
  );
  const [entry] = toHarLog([handshake, ...messages]).log.entries;
  expect(entry!._webSocketMessages).toHaveLength(3);
  expect(entry!.comment).toContain("the last 3 left out of this entry");
});
