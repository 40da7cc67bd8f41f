import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import type { ServerWebSocket } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import { EventList } from "~/ui/live/event-list.tsx";
import { EventStore } from "~/ui/live/event-store.ts";
import { LiveFrameApp } from "~/ui/live/frame-app.tsx";
import { filterErrorText, isTrustedMessage, parseFrameMessage, parseSetFilters } from "~/ui/live/frame-messages.ts";
import { liveSocketUrlFromFragment } from "~/ui/live/frame-url.ts";
import { isPendingRow } from "~/ui/live/pending-rows.ts";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

describe("virtualised event list", () => {
  test("100,000 events: only a window of rows is in the DOM, newest first", () => {
    const events: TracedEvent[] = [];
    for (let i = 0; i < 100_000; i++) events.push(makeEvent({ http_req_path: `/n/${i}` }));
    const started = performance.now();
    render(<EventList events={events} version={1} selectedId={null} onSelect={() => {}} initialHeight={800} />);
    const renderMs = performance.now() - started;
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.length).toBeLessThan(80);
    expect(rows[0]!.textContent).toContain("/n/99999");
    expect(screen.getByRole("table", { name: "Requests" }).getAttribute("aria-rowcount")).toBe("100000");
    expect(renderMs).toBeLessThan(1000);
  });
});

describe("event store", () => {
  test("keeps outbound calls under their parent, dedupes, and filters", () => {
    const store = new EventStore(10);
    const parent = makeEvent({ http_req_method: "POST" });
    const child = makeEvent({ parent_event_id: parent.event_id, http_is_outgoing: true });
    store.add([child, parent, parent]);
    expect(store.all.length).toBe(2);
    expect(store.children(parent.event_id)).toEqual([child]);
    store.setPredicate((e) => e.http_req_method === "POST");
    expect(store.shown).toEqual([parent]);
    store.add([makeEvent({ http_req_method: "GET" })]);
    expect(store.shown.length).toBe(1);
    expect(store.all.length).toBe(3);
  });

  test("drops the oldest beyond its capacity and merges history in time order", () => {
    const store = new EventStore(100);
    const events = Array.from({ length: 20_000 }, () => makeEvent());
    store.add(events);
    expect(store.all.length).toBeLessThanOrEqual(100 + 10_000);
    expect(store.all.at(-1)).toBe(events.at(-1)!);
    expect(store.get(events[0]!.event_id)).toBeUndefined();
    const early = makeEvent({ time: 1 });
    store.mergeHistory([early, events.at(-1)!]);
    expect(store.all[0]).toBe(early);
  });

  test("a pending request is a row until the event with its id replaces it, in its place; settled ones go", () => {
    const store = new EventStore(100);
    const before = makeEvent({ time: 1000 });
    const after = makeEvent({ time: 3000 });
    const parent = makeEvent({ time: 500 });
    const hung = makeEvent({ time: 2000, http_req_path: "/hang", parent_event_id: parent.event_id, http_resp_status_code: 504 });
    const notice = {
      event_id: hung.event_id,
      parent_event_id: parent.event_id,
      time: 2000,
      service: "api",
      http_version: "1.1",
      http_req_method: "GET",
      http_req_host: "h",
      http_req_path: "/hang",
      http_is_outgoing: true,
      http_server_addr: "",
    };
    store.add([parent, before, after]);
    store.addPending([notice]);
    const row = store.get(hung.event_id)!;
    expect(isPendingRow(row)).toBe(true);
    expect(store.shown.map((e) => e.time)).toEqual([500, 1000, 2000, 3000]);
    expect(store.children(parent.event_id)).toEqual([row]);
    // A second notice for it changes nothing; its event replaces it where it stands, once.
    store.addPending([notice]);
    store.add([hung]);
    expect(store.shown).toEqual([parent, before, hung, after]);
    expect(store.children(parent.event_id)).toEqual([hung]);
    expect(isPendingRow(store.get(hung.event_id)!)).toBe(false);
    // A notice that comes after its event is ignored.
    store.addPending([notice]);
    expect(store.shown).toEqual([parent, before, hung, after]);
    // From history too; and a settled one simply goes.
    const other = makeEvent({ time: 2500 });
    const gone = makeEvent({ time: 2600 });
    store.addPending([
      { ...notice, event_id: other.event_id, time: 2500 },
      { ...notice, event_id: gone.event_id, time: 2600 },
    ]);
    store.mergeHistory([other]);
    expect(store.get(other.event_id)).toBe(other);
    store.settle([gone.event_id]);
    expect(store.get(gone.event_id)).toBeUndefined();
    expect(store.shown).toEqual([parent, before, hung, other, after]);
  });
});

describe("frame messages", () => {
  test("setFilters and frame answers are validated", () => {
    expect(parseSetFilters({ type: "setFilters", revision: 2, filters: ["duration > 1ms"] })).toEqual({
      type: "setFilters",
      revision: 2,
      filters: ["duration > 1ms"],
    });
    expect(parseSetFilters({ type: "setFilters", revision: "2", filters: [] })).toBeNull();
    expect(parseSetFilters({ type: "setFilters", revision: 1, filters: [1] })).toBeNull();
    expect(parseFrameMessage({ type: "markApplied", revision: 3 })).toEqual({ type: "markApplied", revision: 3 });
    expect(parseFrameMessage({ type: "other" })).toBeNull();
    expect(filterErrorText("unknown field", 0)).toBe("unknown field (at character 1)");
  });

  test("messages are trusted only from this origin and the expected window", () => {
    const other = { postMessage() {} } as unknown as MessageEventSource;
    const from = (origin: string, source: MessageEventSource | null) => new MessageEvent("message", { origin, source, data: {} });
    expect(isTrustedMessage(from(window.location.origin, window), window)).toBe(true);
    expect(isTrustedMessage(from("https://evil.example", window), window)).toBe(false);
    expect(isTrustedMessage(from(window.location.origin, other), window)).toBe(false);
    expect(isTrustedMessage(from(window.location.origin, null), null)).toBe(false);
  });

  test("the fragment URL must be this origin's live socket; the browser's host is used", () => {
    const here = { protocol: "https:", host: "app.example.com" };
    const enc = (u: string) => `#url=${encodeURIComponent(u)}`;
    expect(liveSocketUrlFromFragment(enc("wss://internal:3000/api/LiveSubscribe?link_id=abc&expiry=x"), here)).toBe(
      "wss://app.example.com/api/LiveSubscribe?link_id=abc&expiry=x",
    );
    expect(liveSocketUrlFromFragment(enc("https://internal:3000/link/abcdefgh12?expiry=2030-01-01T00:00:00.000Z"), here)).toBe(
      "wss://app.example.com/api/LiveSubscribe?link_id=abcdefgh12",
    );
    expect(liveSocketUrlFromFragment(enc("wss://evil.example/steal"), here)).toBeNull();
    expect(liveSocketUrlFromFragment(enc("https://evil.example/steal"), here)).toBeNull();
    expect(liveSocketUrlFromFragment(enc("javascript:alert(1)"), here)).toBeNull();
    expect(liveSocketUrlFromFragment("", here)).toBeNull();
  });
});

describe("live frame against a real socket", () => {
  let server: ReturnType<typeof Bun.serve>;
  const sockets: ServerWebSocket<unknown>[] = [];
  const received: unknown[] = [];
  const parent = makeEvent({ http_req_method: "POST", http_req_path: "/checkout", time: 1_763_700_100_000_000 });
  const child = makeEvent({
    parent_event_id: parent.event_id,
    http_is_outgoing: true,
    http_req_host: "api.stripe.test",
    tls_server_name: "api.stripe.test",
    tags: { tls: "decrypted" },
    http_req_path: "/v1/charges",
    time: parent.time + 10,
  });

  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      fetch(req, srv) {
        // Only upgrades are served (a plain Response would be happy-dom's, not Bun's).
        if (new URL(req.url).pathname === "/api/LiveSubscribe") srv.upgrade(req, { data: undefined });
        return undefined as unknown as Response;
      },
      websocket: {
        open(ws) {
          sockets.push(ws);
          const send = (m: LiveServerMessage) => ws.send(JSON.stringify(m));
          send({ type: "hello", channel: "link", expiresAt: null });
          send({ type: "stats", numPublishers: 1, numSubscribers: 2 });
          send({ type: "history", revision: 0, events: [child, parent] });
        },
        message(ws, data) {
          const msg = JSON.parse(String(data));
          received.push(msg);
          if (msg.type === "setConfig") ws.send(JSON.stringify({ type: "config-applied", revision: msg.revision }));
        },
      },
    });
  });
  afterAll(() => server.stop(true));

  const push = (m: LiveServerMessage) => {
    for (const ws of sockets) ws.send(JSON.stringify(m));
  };

  test("shows history and new events newest first, stats, drops, and opens a request with its outbound call", async () => {
    const socketUrl = `ws://127.0.0.1:${server.port}/api/LiveSubscribe?link_id=abcdefgh12&expiry=2099-01-01T00:00:00.000Z`;
    (window as unknown as { happyDOM: { setURL: (u: string) => void } }).happyDOM.setURL(
      `http://127.0.0.1:${server.port}/iframer?commit=dev#url=${encodeURIComponent(socketUrl)}`,
    );
    render(<LiveFrameApp />);
    await waitFor(() => expect(screen.getByTestId("connection").getAttribute("data-state")).toBe("open"));
    await waitFor(() => expect(screen.getByTestId("event-count").textContent).toContain("2 requests"));
    expect(screen.queryByText("1 program · 2 watching")).not.toBeNull();

    const later = makeEvent({ http_req_path: "/later", time: parent.time + 5_000_000, http_resp_status_code: 503 });
    await act(async () => {
      push({ type: "events", events: [later] });
      push({ type: "dropped", count: 7, total: 7 });
      await Bun.sleep(50);
    });
    await waitFor(() => expect(screen.getByTestId("event-count").textContent).toContain("3 requests"));
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    expect(rows.map((r) => r.getAttribute("data-event-id"))).toEqual([later.event_id, child.event_id, parent.event_id]);
    expect(within(rows[1]!).queryByLabelText("outbound")).not.toBeNull();
    // Outbound and inbound rows show the same form: host and path.
    expect(rows[1]!.textContent).toContain("api.stripe.test/v1/charges");
    expect(rows[1]!.textContent).not.toContain("https://");
    expect(rows[0]!.textContent).toContain(`localhost:8080${later.http_req_path}`);
    expect(screen.queryByText("7 dropped")).not.toBeNull();

    fireEvent.click(rows[2]!);
    const detail = await screen.findByRole("region", { name: "Request detail" });
    expect(within(detail).getByTestId("detail-url").textContent).toBe("http://localhost:8080/checkout");
    const outbound = within(detail).getByRole("list", { name: "Outbound calls" });
    fireEvent.click(within(outbound).getByRole("button"));
    await waitFor(() =>
      expect(within(screen.getByRole("region", { name: "Request detail" })).getByTestId("detail-url").textContent).toBe(
        "https://api.stripe.test/v1/charges",
      ),
    );
    expect(within(screen.getByRole("region", { name: "Request detail" })).queryByText("Made while serving")).not.toBeNull();

    // Arrow keys walk the list as shown (newest first); Escape closes the detail.
    const detailUrl = () => within(screen.getByRole("region", { name: "Request detail" })).getByTestId("detail-url").textContent;
    fireEvent.keyDown(screen.getByTestId("connection"), { key: "ArrowDown" });
    await waitFor(() => expect(detailUrl()).toBe("http://localhost:8080/checkout"));
    fireEvent.keyDown(screen.getByTestId("connection"), { key: "ArrowUp" });
    fireEvent.keyDown(screen.getByTestId("connection"), { key: "ArrowUp" });
    await waitFor(() => expect(detailUrl()).toBe("http://localhost:8080/later"));
    fireEvent.keyDown(screen.getByTestId("connection"), { key: "Escape" });
    await waitFor(() => expect(screen.queryByRole("region", { name: "Request detail" })).toBeNull());
  });

  test("the socket reconnects after an abnormal close, asking for a fresh URL each time", async () => {
    const { LiveSocket } = await import("~/ui/live/live-socket.ts");
    const asked: number[] = [];
    const states: string[] = [];
    let opens = 0;
    const socket = new LiveSocket(
      async () => {
        asked.push(Date.now());
        return `ws://127.0.0.1:${server.port}/api/LiveSubscribe?ticket=t${asked.length}`;
      },
      { onMessage: () => {}, onState: (s) => states.push(s), onOpen: () => opens++ },
    );
    socket.start();
    await waitFor(() => expect(opens).toBe(1));
    const before = sockets.length;
    sockets.at(-1)!.close(1011, "server restart");
    await waitFor(() => expect(opens).toBe(2), { timeout: 3000 });
    expect(sockets.length).toBe(before + 1);
    expect(asked.length).toBe(2);
    expect(asked[1]! - asked[0]!).toBeGreaterThanOrEqual(900);
    expect(states).toContain("reconnecting");
    socket.stop();
    expect(states.at(-1)).toBe("closed");
  });

  test("a URL for another origin is refused", async () => {
    (window as unknown as { happyDOM: { setURL: (u: string) => void } }).happyDOM.setURL(
      `http://127.0.0.1:${server.port}/iframer#url=${encodeURIComponent("wss://evil.example/x")}`,
    );
    render(<LiveFrameApp />);
    await waitFor(() => expect(screen.queryByText("This live view URL is not valid here.")).not.toBeNull());
  });
});
