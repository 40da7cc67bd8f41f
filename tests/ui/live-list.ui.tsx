import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, render, screen, within } from "@testing-library/react";
import {
  type ColumnPrefs,
  defaultPrefs,
  displayOrder,
  loadPrefs,
  nextSort,
  parsePrefs,
  prefsKey,
  protocolLabel,
  remoteAddress,
  savePrefs,
} from "~/ui/live/columns.ts";
import { EventList } from "~/ui/live/event-list.tsx";
import { EventStore } from "~/ui/live/event-store.ts";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

const cellsOf = (row: HTMLElement) =>
  within(row)
    .getAllByRole("cell")
    .map((c) => c.textContent);

describe("the live list's columns", () => {
  test("protocol reads h1, h2, gRPC and TLS; the remote address is the other end", () => {
    expect(protocolLabel(makeEvent({ http_version: "1.1" }))).toBe("h1");
    expect(protocolLabel(makeEvent({ http_version: "2" }))).toBe("h2");
    expect(protocolLabel(makeEvent({ http_version: "2", http_req_content_type: "application/grpc+proto" }))).toBe("gRPC");
    expect(protocolLabel(makeEvent({ http_version: "2", tags: { tls: "decrypted" } }))).toBe("h2 TLS");
    expect(protocolLabel(makeEvent({ protocol: "tcp", tls_server_name: "db.internal" }))).toBe("TCP TLS");
    const inbound = makeEvent({ http_client_addr: "10.0.0.9:5123", http_server_addr: "10.0.0.1:8080" });
    expect(remoteAddress(inbound)).toBe("10.0.0.9:5123");
    expect(remoteAddress({ ...inbound, http_is_outgoing: true })).toBe("10.0.0.1:8080");
  });

  test("chosen columns show each request's service, protocol, type, sizes, remote address and a waterfall bar", () => {
    const first = makeEvent({ time: 1_000_000, http_duration: 1_000, service: "shop", http_req_host: "shop.test" });
    const second = makeEvent({
      time: 1_001_000,
      http_duration: 3_000,
      service: "shop",
      http_is_outgoing: true,
      http_req_host: "api.pay.test",
      http_req_path: "/v1/charges",
      http_server_addr: "192.0.2.7:443",
      http_version: "2",
      http_req_body_size_bytes_wire: 2048,
      http_resp_content_type: "application/json; charset=utf-8",
    });
    const prefs: ColumnPrefs = {
      visible: ["status", "method", "protocol", "service", "url", "remote", "contentType", "requestSize", "size", "duration", "waterfall"],
      widths: {},
    };
    render(<EventList events={[first, second]} version={1} selectedId={null} onSelect={() => {}} prefs={prefs} />);
    const headers = screen.getAllByRole("columnheader").map((h) => h.getAttribute("data-column"));
    expect(headers).toEqual(prefs.visible);
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    expect(cellsOf(rows[0]!).slice(2, 9)).toEqual([
      "h2",
      "shop",
      "↗api.pay.test/v1/charges",
      "192.0.2.7:443",
      "application/json",
      "2.0 KB",
      `${second.http_resp_body_size_bytes_wire} B`,
    ]);
    // The window runs from the first start (0 µs) to the last end (4,000 µs): the second starts a quarter in and lasts
    // three quarters; the first starts at 0 and lasts a quarter.
    const bar = (row: HTMLElement) => row.querySelector("[data-waterfall-left]")!;
    expect([bar(rows[0]!).getAttribute("data-waterfall-left"), bar(rows[0]!).getAttribute("data-waterfall-width")]).toEqual([
      "25.0",
      "75.0",
    ]);
    expect([bar(rows[1]!).getAttribute("data-waterfall-left"), bar(rows[1]!).getAttribute("data-waterfall-width")]).toEqual([
      "0.0",
      "25.0",
    ]);
  });

  test("inbound and outbound rows show the same form of URL: host and path", () => {
    const inbound = makeEvent({ http_req_host: "localhost:8080", http_req_path: "/api/users/7" });
    const outbound = makeEvent({
      http_is_outgoing: true,
      http_req_host: "api.test",
      http_req_path: "/v1/items?x=1",
      tags: { tls: "decrypted" },
    });
    render(<EventList events={[inbound, outbound]} version={1} selectedId={null} onSelect={() => {}} />);
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    expect(rows[0]!.textContent).toContain("api.test/v1/items?x=1");
    expect(rows[0]!.textContent).not.toContain("https://");
    expect(rows[1]!.textContent).toContain("localhost:8080/api/users/7");
  });

  test("a header cell sorts: descending, ascending, then newest first again; ties stay newest first", () => {
    const a = makeEvent({ http_duration: 5 });
    const b = makeEvent({ http_duration: 9 });
    const c = makeEvent({ http_duration: 5 });
    let sort = nextSort(null, "duration");
    expect(displayOrder([a, b, c], sort)).toEqual([b, c, a]);
    sort = nextSort(sort, "duration");
    expect(displayOrder([a, b, c], sort)).toEqual([c, a, b]);
    sort = nextSort(sort, "duration");
    expect(sort).toBeNull();
    expect(displayOrder([a, b, c], sort)).toEqual([c, b, a]);
    expect(nextSort({ column: "duration", isAscending: true }, "status")).toEqual({ column: "status", isAscending: false });
  });

  test("the header says how the list is sorted and sorts on a click anywhere in the cell", () => {
    const clicked: string[] = [];
    render(
      <EventList
        events={[makeEvent()]}
        version={1}
        selectedId={null}
        onSelect={() => {}}
        sort={{ column: "status", isAscending: true }}
        onSort={(column) => clicked.push(column)}
      />,
    );
    const status = screen.getAllByRole("columnheader").find((h) => h.getAttribute("data-column") === "status")!;
    expect(status.getAttribute("aria-sort")).toBe("ascending");
    within(status).getByRole("button").click();
    expect(clicked).toEqual(["status"]);
  });

  test("a resize handle moves the column's width by keyboard too, within bounds", () => {
    const sizes: Array<[string, number]> = [];
    render(<EventList events={[makeEvent()]} version={1} selectedId={null} onSelect={() => {}} onResize={(c, w) => sizes.push([c, w])} />);
    const handle = screen.getByRole("separator", { name: "Resize Size" });
    handle.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    expect(sizes).toEqual([["size", 84]]);
    expect(screen.queryByRole("separator", { name: "Resize URL" })).toBeNull();
  });
});

describe("the column choice, kept per user", () => {
  test("each signed-in user has a key of their own; a shared link has its own", () => {
    const chosen: ColumnPrefs = { visible: [...defaultPrefs().visible, "protocol"], widths: { service: 200 } };
    savePrefs("user-a", chosen);
    expect(loadPrefs("user-a")).toEqual(parsePrefs(JSON.stringify(chosen)));
    expect(loadPrefs("user-a").visible).toContain("protocol");
    expect(loadPrefs("user-b")).toEqual(defaultPrefs());
    expect(loadPrefs(null)).toEqual(defaultPrefs());
    expect(prefsKey("user-a")).not.toBe(prefsKey("user-b"));
    expect(prefsKey(null)).toBe("tapscope:live-columns:shared-links");
  });

  test("what is read back is bounded: unknown columns and bad widths are dropped, the core columns stay", () => {
    expect(parsePrefs("{not json")).toEqual(defaultPrefs());
    expect(parsePrefs(JSON.stringify({ visible: ["x".repeat(5000)] }))).toEqual(defaultPrefs());
    const read = parsePrefs(
      JSON.stringify({ visible: ["protocol", "evil", 3], widths: { service: 99_999, time: -5, url: "wide", nope: 10 } }),
    );
    expect(read.visible).toEqual(["status", "method", "protocol", "url", "duration"]);
    expect(read.widths).toEqual({ service: 600, time: 40 });
  });
});

describe("Clear", () => {
  test("empties the store; retained history from before the clear is not merged back, newer events are", () => {
    const store = new EventStore();
    const old = makeEvent();
    store.add([old, makeEvent()]);
    store.clear();
    expect(store.all).toEqual([]);
    expect(store.shown).toEqual([]);
    expect(store.get(old.event_id)).toBeUndefined();
    const newer = makeEvent();
    store.mergeHistory([old, newer]);
    expect(store.all).toEqual([newer]);
    store.add([makeEvent()]);
    expect(store.all.length).toBe(2);
  });
});
