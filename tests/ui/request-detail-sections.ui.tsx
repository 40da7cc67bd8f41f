import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { markPendingRow } from "~/ui/live/pending-rows.ts";
import { CHILDREN_PAGE, initialOpenDepth } from "~/ui/request-detail/json-tree.tsx";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { b64, makeEvent } from "./live-event-factory.ts";

let clipboard = "";
beforeEach(() => {
  clipboard = "";
  Object.defineProperty(navigator, "clipboard", {
    configurable: true,
    value: {
      writeText: async (text: string) => {
        clipboard = text;
      },
    },
  });
});
afterEach(cleanup);

const rowsOf = (table: HTMLElement) =>
  [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));

function served(overrides: Partial<TracedEvent> = {}): TracedEvent {
  return makeEvent({
    http_req_method: "POST",
    http_req_path: "/api/orders?id=7&tag=a+b&tag=c%20d&bad=%E0%A4%A&flag",
    http_req_host: "shop.local:8080",
    http_version: "2",
    http_client_addr: "10.0.0.9:51234",
    http_server_addr: "10.0.0.1:8080",
    process_executable_name: "node",
    process_id: 4242,
    http_req_headers: [
      ["Host", "shop.local:8080"],
      ["Content-Type", "application/x-www-form-urlencoded"],
      ["Cookie", "sid=abc123; theme=dark"],
    ],
    http_req_content_type: "application/x-www-form-urlencoded",
    http_req_body: b64("name=O%27Brien&note=caf%C3%A9+au+lait&empty="),
    http_req_body_size_bytes_wire: 44,
    http_resp_status_code: 201,
    http_resp_headers: [
      ["Content-Type", "application/json"],
      ["Set-Cookie", "sid=new456; Path=/; HttpOnly; SameSite=Lax"],
      ["Set-Cookie", "seen=1; Max-Age=60"],
    ],
    http_resp_content_type: "application/json",
    http_resp_body: b64('{"id":7,"items":[{"sku":"A1","qty":2}],"ok":true,"note":null}'),
    http_resp_body_size_bytes_wire: 61,
    ...overrides,
  });
}

describe("sections, as DevTools has them", () => {
  test("a bar names each section of a served request, and jumping to one marks it current", () => {
    const request = served();
    const call = makeEvent({ parent_event_id: request.event_id, http_is_outgoing: true, http_req_host: "api.test" });
    render(<RequestDetail event={request} outboundCalls={[call]} />);
    const nav = screen.getByRole("navigation", { name: "Sections" });
    expect(
      within(nav)
        .getAllByRole("button")
        .map((b) => b.textContent),
    ).toEqual(["General", "Timing", "Calls made (1)", "Headers (6)", "Payload", "Response"]);
    expect(within(nav).getByRole("button", { name: "General" }).getAttribute("aria-current")).toBe("true");
    fireEvent.click(within(nav).getByRole("button", { name: "Payload" }));
    expect(within(nav).getByRole("button", { name: "Payload" }).getAttribute("aria-current")).toBe("true");
    expect(within(nav).getByRole("button", { name: "General" }).getAttribute("aria-current")).toBeNull();
  });

  test("General: URL, method, status, protocol, remote address, sizes and process", () => {
    render(<RequestDetail event={served({ http_req_content_type: "application/grpc", tags: { tls: "decrypted" } })} />);
    const general = Object.fromEntries(rowsOf(screen.getByRole("table", { name: "General" })));
    expect(general.URL).toBe("https://shop.local:8080/api/orders?id=7&tag=a+b&tag=c%20d&bad=%E0%A4%A&flag");
    expect(general.method).toBe("POST");
    expect(general.status).toBe("201");
    expect(general.protocol).toBe("HTTP/2 · gRPC · TLS decrypted");
    // A served request's remote side is its client; an outbound call's is the server it called.
    expect(general["remote address"]).toBe("10.0.0.9:51234");
    expect(general["request body"]).toBe("44 B · application/grpc");
    expect(general["response body"]).toBe("61 B · application/json");
    expect(general.process).toBe("node (pid 4242)");
    cleanup();
    render(<RequestDetail event={served({ http_is_outgoing: true })} />);
    expect(Object.fromEntries(rowsOf(screen.getByRole("table", { name: "General" })))["remote address"]).toBe("10.0.0.1:8080");
  });

  test("Headers: each side with its count, a raw view, and a copy of the raw lines", async () => {
    render(<RequestDetail event={served()} />);
    expect(screen.getByRole("heading", { name: "Request headers (3)" })).toBeDefined();
    expect(screen.getByRole("heading", { name: "Response headers (3)" })).toBeDefined();
    const [requestRaw] = screen.getAllByRole("button", { name: "Raw" });
    fireEvent.click(requestRaw!);
    expect(screen.getByLabelText("Request headers, raw").textContent).toBe(
      "Host: shop.local:8080\nContent-Type: application/x-www-form-urlencoded\nCookie: sid=abc123; theme=dark",
    );
    expect(screen.queryByRole("table", { name: "Request headers" })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Copy response headers" }));
    await waitFor(() =>
      expect(clipboard).toBe(
        "Content-Type: application/json\nSet-Cookie: sid=new456; Path=/; HttpOnly; SameSite=Lax\nSet-Cookie: seen=1; Max-Age=60",
      ),
    );
  });

  test("Payload: the query string and form fields decoded as tables; cookies both ways with their attributes", () => {
    render(<RequestDetail event={served()} />);
    expect(rowsOf(screen.getByRole("table", { name: "Query string" }))).toEqual([
      ["id", "7"],
      ["tag", "a b"],
      ["tag", "c d"],
      // A malformed escape is shown as sent rather than dropped.
      ["bad", "%E0%A4%A"],
      ["flag", ""],
    ]);
    expect(rowsOf(screen.getByRole("table", { name: "Form fields" }))).toEqual([
      ["name", "O'Brien"],
      ["note", "café au lait"],
      ["empty", ""],
    ]);
    expect(rowsOf(screen.getByRole("table", { name: "Request cookies" }))).toEqual([
      ["sid", "abc123"],
      ["theme", "dark"],
    ]);
    expect(rowsOf(screen.getByRole("table", { name: "Response cookies" }))).toEqual([
      ["sid", "new456", "Path=/; HttpOnly; SameSite=Lax"],
      ["seen", "1", "Max-Age=60"],
    ]);
  });

  test("Payload: a multipart form lists its fields and files; a huge query shows a bounded table and counts the rest", () => {
    const multipart = [
      "--XyZ",
      'Content-Disposition: form-data; name="title"',
      "",
      "Grüße",
      "--XyZ",
      'Content-Disposition: form-data; name="upload"; filename="a.bin"',
      "Content-Type: application/octet-stream",
      "",
      "\u0000\u0001\u0002\u0003",
      "--XyZ--",
      "",
    ].join("\r\n");
    const query = Array.from({ length: 600 }, (_, i) => `p${i}=${i}`).join("&");
    render(
      <RequestDetail
        event={served({
          http_req_path: `/upload?${query}`,
          http_req_content_type: "multipart/form-data; boundary=XyZ",
          http_req_body: b64(multipart),
        })}
      />,
    );
    expect(rowsOf(screen.getByRole("table", { name: "Form fields" }))).toEqual([
      ["title", "Grüße", ""],
      ["upload", "file a.bin, 4 bytes", "application/octet-stream"],
    ]);
    expect(screen.getByRole("table", { name: "Query string" }).querySelectorAll("tbody tr").length).toBe(500);
    expect(screen.getByText("… 100 more not shown")).toBeDefined();
    expect(screen.getByRole("heading", { name: "Query string (600)" })).toBeDefined();
  });

  test("captured markup in tables and the tree stays text", () => {
    const hostile = '<img src=x onerror="window.__tablePwned=1"><b>x</b>';
    render(
      <RequestDetail
        event={served({
          http_req_path: `/x?q=${encodeURIComponent(hostile)}`,
          http_req_headers: [["Cookie", `c=${hostile}`]],
          http_resp_body: b64(JSON.stringify({ [hostile]: hostile })),
        })}
      />,
    );
    const detail = screen.getByRole("region", { name: "Request detail" });
    expect(detail.querySelector("img, b")).toBeNull();
    expect(screen.getByRole("table", { name: "Query string" }).textContent).toContain(hostile);
    expect(screen.getByRole("list", { name: "JSON tree" }).textContent).toContain(JSON.stringify(hostile));
    expect((window as unknown as { __tablePwned?: number }).__tablePwned).toBeUndefined();
  });
});

describe("bodies", () => {
  test("the JSON tree colours values by type and opens and closes nodes", () => {
    render(<RequestDetail event={served()} />);
    const tree = within(screen.getByLabelText("Response body")).getByRole("list", { name: "JSON tree" });
    const types = [...tree.querySelectorAll("[data-json-type]")].map((el) => [el.getAttribute("data-json-type"), el.textContent]);
    expect(types).toEqual([
      ["number", "7"],
      ["string", '"A1"'],
      ["number", "2"],
      ["boolean", "true"],
      ["null", "null"],
    ]);
    const items = within(tree).getByRole("button", { name: "Close items" });
    expect(items.getAttribute("aria-expanded")).toBe("true");
    fireEvent.click(items);
    expect(tree.textContent).not.toContain("A1");
    fireEvent.click(within(tree).getByRole("button", { name: "Open items" }));
    expect(tree.textContent).toContain("A1");
  });

  test("a 10 MB JSON body renders a bounded tree: its top levels, a page of children and a button for more", () => {
    const big = Array.from({ length: 100_000 }, (_, i) => ({ id: i, name: `item-${i}`, tags: ["a", "b"], text: "x".repeat(50) }));
    const json = JSON.stringify(big);
    expect(json.length).toBeGreaterThan(10_000_000);
    // The opening walk stops at its budget instead of visiting every node.
    expect(initialOpenDepth(big)).toBe(1);
    render(<RequestDetail event={makeEvent({ http_resp_body: b64(json), http_resp_content_type: "application/json" })} />);
    const tree = within(screen.getByLabelText("Response body")).getByRole("list", { name: "JSON tree" });
    // The whole body would be 600,000 rows; what is on the page is a page of the top level, closed.
    expect(tree.querySelectorAll("li").length).toBeLessThanOrEqual(CHILDREN_PAGE + 2);
    fireEvent.click(within(tree).getByRole("button", { name: "Show 100 more of 99,900" }));
    expect(tree.querySelectorAll(":scope > li > ul > li").length).toBe(2 * CHILDREN_PAGE + 1);
    expect(tree.querySelectorAll("li").length).toBeLessThanOrEqual(2 * CHILDREN_PAGE + 2);
  }, 60_000);

  test("a long string in the tree shows its start; the Raw view has all of it", () => {
    const long = "y".repeat(50_000);
    render(
      <RequestDetail event={makeEvent({ http_resp_body: b64(JSON.stringify({ long })), http_resp_content_type: "application/json" })} />,
    );
    const body = screen.getByLabelText("Response body");
    expect(body.textContent).toContain("48,000 more characters (see Raw)");
    fireEvent.click(within(body).getByRole("button", { name: "Raw" }));
    expect(body.querySelector("pre")?.textContent).toBe(JSON.stringify({ long }));
  });

  test("find in body marks each match and counts them, bounded; the tree returns when the search is cleared", () => {
    render(
      <RequestDetail event={served({ http_resp_body: b64(JSON.stringify({ a: "needle", b: ["NEEDLE", "hay"], c: "x".repeat(10) })) })} />,
    );
    const body = screen.getByLabelText("Response body");
    const find = within(body).getByRole("searchbox", { name: "Find in response" });
    fireEvent.change(find, { target: { value: "needle" } });
    expect([...body.querySelectorAll("mark")].map((m) => m.textContent)).toEqual(["needle", "NEEDLE"]);
    expect(within(body).getByTestId("find-count").textContent).toBe("2 matches");
    expect(find.getAttribute("maxlength")).toBe("200");
    fireEvent.change(find, { target: { value: "" } });
    expect(body.querySelector("mark")).toBeNull();
    expect(within(body).getByRole("list", { name: "JSON tree" })).toBeDefined();
    cleanup();
    render(<RequestDetail event={makeEvent({ http_resp_body: b64("ab ".repeat(5000)), http_resp_content_type: "text/plain" })} />);
    const text = screen.getByLabelText("Response body");
    fireEvent.change(within(text).getByRole("searchbox", { name: "Find in response" }), { target: { value: "ab" } });
    expect(within(text).getByTestId("find-count").textContent).toBe("1,000+ matches");
    expect(text.querySelectorAll("mark").length).toBe(1000);
  });

  test("copy body, copy response", async () => {
    const event = served();
    render(<RequestDetail event={event} />);
    fireEvent.click(within(screen.getByLabelText("Request body")).getByRole("button", { name: "Copy body" }));
    await waitFor(() => expect(clipboard).toBe("name=O%27Brien&note=caf%C3%A9+au+lait&empty="));
    fireEvent.click(screen.getByRole("button", { name: "Copy response" }));
    await waitFor(() =>
      expect(clipboard).toBe(
        'HTTP/2 201\nContent-Type: application/json\nSet-Cookie: sid=new456; Path=/; HttpOnly; SameSite=Lax\nSet-Cookie: seen=1; Max-Age=60\n\n{"id":7,"items":[{"sku":"A1","qty":2}],"ok":true,"note":null}',
      ),
    );
  });
});

describe("copy as", () => {
  test("the Copy as menu copies fetch, Node.js, Python requests and HTTPie", async () => {
    render(<RequestDetail event={served()} />);
    fireEvent.click(screen.getByRole("button", { name: "Copy as… ▾" }));
    const menu = screen.getByRole("list", { name: "Copy as" });
    expect(
      within(menu)
        .getAllByRole("button")
        .map((b) => b.textContent),
    ).toEqual(["Copy as fetch", "Copy as Node.js", "Copy as Python requests", "Copy as HTTPie"]);
    fireEvent.click(within(menu).getByRole("button", { name: "Copy as Python requests" }));
    await waitFor(() => expect(clipboard.startsWith("import requests\n")).toBe(true));
    fireEvent.click(within(menu).getByRole("button", { name: "Copy as HTTPie" }));
    await waitFor(() => expect(clipboard.startsWith("http \\\n  --ignore-stdin \\\n  --raw 'name=O%27Brien")).toBe(true));
  });

  test("a request holding redacted values says that a replay needs the real ones; others say nothing", () => {
    render(
      <RequestDetail
        event={served({
          http_req_path: "/login?user=bob&token=%5Bredacted%5D",
          http_req_headers: [
            ["Authorization", "Bearer [redacted]"],
            ["Cookie", "sid=sha256:0123456789abcdef"],
            ["Accept", "*/*"],
          ],
        })}
      />,
    );
    expect(screen.getByTestId("redacted-notice").textContent).toBe(
      "Redacted when captured: Authorization, Cookie, query. A copied request sends the markers, not the secrets: put the real values in before you replay it.",
    );
    cleanup();
    render(<RequestDetail event={served()} />);
    expect(screen.queryByTestId("redacted-notice")).toBeNull();
  });
});

describe("a request still waiting", () => {
  test("offers no HAR of itself until its exchange is recorded; the recorded event does", () => {
    const waiting = makeEvent({ http_req_method: "GET", http_req_path: "/hang", http_resp_status_code: 0, http_duration: 0 });
    markPendingRow(waiting);
    render(<RequestDetail event={waiting} onSaveHar={() => {}} />);
    expect(screen.queryByRole("button", { name: "Save as HAR" })).toBeNull();
    expect(screen.getByRole("button", { name: "Copy as cURL" })).toBeDefined();
    cleanup();
    render(<RequestDetail event={{ ...waiting, http_unanswered: "client_aborted", http_duration: 2_000_000 }} onSaveHar={() => {}} />);
    expect(screen.getByRole("button", { name: "Save as HAR" })).toBeDefined();
  });
});
