import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { classifyBody, hexRows } from "~/ui/request-detail/body.ts";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { timingSteps } from "~/ui/request-detail/timing.ts";
import { b64, makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

describe("timing waterfall", () => {
  test("inbound steps are request receive, processing, response send; the slowest is the culprit", () => {
    const steps = timingSteps(makeEvent({ timing_send: 300, timing_wait: 9000, timing_receive: 700 }));
    expect(steps.map((s) => s.label)).toEqual(["request receive", "processing", "response send"]);
    expect(steps.filter((s) => s.isCulprit).map((s) => s.label)).toEqual(["processing"]);
    expect(steps.map((s) => s.start)).toEqual([0, 300, 9300]);
  });

  test("outbound steps include connect; steps that do not apply are left out", () => {
    const steps = timingSteps(
      makeEvent({ http_is_outgoing: true, timing_connect: 50_000, timing_send: 10, timing_wait: 20_000, timing_receive: -1 }),
    );
    expect(steps.map((s) => s.label)).toEqual(["connect", "send", "wait"]);
    expect(steps.find((s) => s.isCulprit)?.label).toBe("connect");
  });

  test("the rendered waterfall flags the culprit row", () => {
    render(<RequestDetail event={makeEvent({ timing_send: 100, timing_wait: 200, timing_receive: 90_000 })} />);
    const timing = screen.getByRole("list", { name: "Timing" });
    const culprit = within(timing).getByText("culprit").closest("li");
    expect(culprit?.textContent).toContain("response send");
    expect(timing.querySelectorAll("[data-culprit]").length).toBe(1);
  });
});

describe("TLS", () => {
  test("a decrypted call: https URL, the TLS line, and a TLS handshake step between connect and send", () => {
    const event = makeEvent({
      http_is_outgoing: true,
      tls_server_name: "api.example.test",
      http_req_host: "api.example.test",
      http_req_path: "/v1/charges",
      tags: { tls: "decrypted", tls_alpn: "h2" },
      timing_connect: 400,
      timing_tls: 2500,
      timing_send: 10,
      timing_wait: 900,
      timing_receive: 20,
    });
    expect(timingSteps(event).map((s) => [s.label, s.start])).toEqual([
      ["connect", 0],
      ["TLS handshake", 400],
      ["send", 2900],
      ["wait", 2910],
      ["receive", 3810],
    ]);
    render(<RequestDetail event={event} />);
    expect(screen.getByTestId("detail-url").textContent).toBe("https://api.example.test/v1/charges");
    expect(screen.getByTestId("detail-tls").textContent).toBe("TLS decrypted · h2 · api.example.test");
  });

  test("a connection not decrypted says why", () => {
    const event = makeEvent({
      protocol: "tcp",
      http_is_outgoing: true,
      tls_server_name: "mtls.example.test",
      tags: { tls: "not decrypted", tls_reason: "mutual TLS" },
    });
    render(<RequestDetail event={event} />);
    expect(screen.getByTestId("detail-tls").textContent).toBe("TLS not decrypted: mutual TLS (mtls.example.test)");
  });
});

describe("bodies", () => {
  test("JSON is a tree; Raw shows it as captured", () => {
    render(
      <RequestDetail event={makeEvent({ http_resp_body: b64('{"a":1,"b":[true,null]}'), http_resp_content_type: "application/json" })} />,
    );
    const body = screen.getByLabelText("Response body");
    expect(body.getAttribute("data-body-kind")).toBe("json");
    expect(within(body).getByRole("list", { name: "JSON tree" }).textContent).toBe("▾{2}a:1▾b:[2]0:true1:null");
    fireEvent.click(within(body).getByRole("button", { name: "Raw" }));
    expect(body.querySelector("pre")?.textContent).toBe('{"a":1,"b":[true,null]}');
  });

  test("binary is shown as hex, 16 bytes per row with printable characters", () => {
    const bytes = new Uint8Array(40).map((_, i) => (i === 0 ? 0 : 65 + (i % 26)));
    bytes[1] = 0xff;
    const rows = hexRows(bytes);
    expect(rows.length).toBe(3);
    expect(rows[0]!.offset).toBe("00000000");
    expect(rows[1]!.offset).toBe("00000010");
    expect(rows[0]!.hex.startsWith("00 ff 43")).toBe(true);
    expect(rows[0]!.ascii).toBe("..CDEFGHIJKLMNOP");
    render(
      <RequestDetail
        event={makeEvent({ http_resp_body: Buffer.from(bytes).toString("base64"), http_resp_content_type: "application/octet-stream" })}
      />,
    );
    const hex = screen.getByTestId("hex");
    expect(hex.children.length).toBe(3);
    expect(hex.textContent).toContain("00000020");
  });

  test("an image body is shown from a blob URL with its content type", async () => {
    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
    const created: Blob[] = [];
    const original = URL.createObjectURL;
    URL.createObjectURL = (blob: Blob) => {
      created.push(blob);
      return original.call(URL, blob);
    };
    try {
      render(<RequestDetail event={makeEvent({ http_resp_body: png.toString("base64"), http_resp_content_type: "image/png" })} />);
      const img = await screen.findByRole("img", { name: "Captured image/png body" });
      expect(img.getAttribute("src")?.startsWith("blob:")).toBe(true);
      expect(created[0]?.type).toBe("image/png");
      expect(new Uint8Array(await created[0]!.arrayBuffer())).toEqual(new Uint8Array(png));
    } finally {
      URL.createObjectURL = original;
    }
  });

  test("an SVG body (or any active type dressed as an image) is its source text, never a blob or data URL", () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>window.__svgRan = 1</script><circle r="4"/></svg>';
    const created: Blob[] = [];
    const original = URL.createObjectURL;
    URL.createObjectURL = (blob: Blob) => {
      created.push(blob);
      return original.call(URL, blob);
    };
    try {
      render(
        <RequestDetail
          event={makeEvent({
            http_req_body: b64("<html><script>window.__svgRan = 2</script></html>"),
            http_req_content_type: "image/png",
            http_resp_body: b64(svg),
            http_resp_content_type: "image/svg+xml; charset=utf-8",
          })}
        />,
      );
      const detail = screen.getByRole("region", { name: "Request detail" });
      expect(detail.querySelector("img, svg script, object, embed, iframe")).toBeNull();
      expect(screen.getByLabelText("Response body").textContent).toContain(svg);
      expect(screen.getByTestId("svg-as-source").textContent).toContain("SVG image");
      expect(screen.getByLabelText("Request body").textContent).toContain("<html>");
      expect(created).toEqual([]);
      expect((window as unknown as { __svgRan?: number }).__svgRan).toBeUndefined();
    } finally {
      URL.createObjectURL = original;
    }
  });

  test("only checked raster types become images", () => {
    expect(classifyBody(b64("<svg/>"), "image/svg+xml").kind).toBe("text");
    expect(classifyBody(b64("<html></html>"), "image/gif").kind).toBe("text");
    expect(classifyBody(b64("%PDF-1.4"), "application/pdf").kind).toBe("text");
    expect(classifyBody(Buffer.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0]).toString("base64"), "image/gif")).toMatchObject({
      kind: "image",
      contentType: "image/gif",
    });
  });

  test("hostile HTML in bodies and headers is text, never markup", () => {
    const hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b>';
    render(
      <RequestDetail
        event={makeEvent({
          http_req_path: "/<img src=x onerror=alert(1)>",
          http_req_headers: [["X-Evil", hostile]],
          tags: { note: hostile },
          process_command_line: hostile,
          http_resp_body: b64(hostile),
          http_resp_content_type: "text/html",
        })}
      />,
    );
    const detail = screen.getByRole("region", { name: "Request detail" });
    expect(detail.querySelector("script")).toBeNull();
    expect(detail.querySelector("img")).toBeNull();
    expect(detail.querySelector("b")).toBeNull();
    expect(screen.getByLabelText("Response body").textContent).toContain(hostile);
    expect(screen.getByRole("table", { name: "Request headers" }).textContent).toContain(hostile);
    expect(screen.getByRole("table", { name: "Details" }).textContent).toContain(`note${hostile}`);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  test("tags read as words in Details, not as keys", () => {
    render(<RequestDetail event={makeEvent({ tags: { http_resp_version: "1.0", grpc_status: "5", db_system: "postgresql" } })} />);
    const details = screen.getByRole("table", { name: "Details" });
    const rows = Array.from(details.querySelectorAll("tr")).map((tr) => Array.from(tr.querySelectorAll("td")).map((td) => td.textContent));
    expect(rows).toContainEqual(["response HTTP version", "HTTP/1.0"]);
    expect(rows).toContainEqual(["gRPC status", "5"]);
    expect(rows).toContainEqual(["db system", "postgresql"]);
    expect(details.textContent).not.toContain("tag ");
    expect(details.textContent).not.toContain("http_resp_version");
  });

  test("what the filter looked for is marked in the headers and bodies, as text", () => {
    const hostile = "<b>zebra-7781</b>";
    render(
      <RequestDetail
        event={makeEvent({
          http_req_headers: [
            ["X-Request-Id", "rid-5521"],
            ["X-Other", "rid-5521"],
          ],
          http_req_body: b64(`{"order":"ZEBRA-7781","note":"${hostile}"}`),
          http_req_content_type: "application/json",
        })}
        highlight={{ body: ["zebra-7781"], headers: [{ name: "x-request-id", text: "RID-5521" }] }}
      />,
    );
    const body = screen.getByLabelText("Request body");
    expect([...body.querySelectorAll("mark")].map((m) => m.textContent)).toEqual(["ZEBRA-7781", "zebra-7781"]);
    expect(body.querySelector("b")).toBeNull();
    const headers = screen.getByRole("table", { name: "Request headers" });
    // Only the header the condition named.
    expect([...headers.querySelectorAll("mark")].map((m) => m.closest("tr")?.firstChild?.textContent)).toEqual(["X-Request-Id"]);
    cleanup();
    render(<RequestDetail event={makeEvent({ http_req_body: b64("zebra-7781") })} />);
    expect(document.querySelector("mark")).toBeNull();
  });

  test("truncation is shown with the wire size", () => {
    render(
      <RequestDetail
        event={makeEvent({
          http_resp_body: b64("x".repeat(1024)),
          http_resp_content_type: "text/plain",
          http_resp_body_truncated: true,
          http_resp_body_size_bytes_wire: 5 * 1024 * 1024,
        })}
      />,
    );
    expect(screen.getByTestId("truncated").textContent).toBe("Truncated: showing the first 1.0 KB of 5.0 MB on the wire");
  });

  test("text that is not valid UTF-8 is treated as binary; a cut multi-byte tail is still text", () => {
    expect(classifyBody(Buffer.from([0xc3, 0x28, 0x41, 0x42]).toString("base64"), "text/plain").kind).toBe("binary");
    const cut = Buffer.from("héllo wörld ✓", "utf8").subarray(0, -1);
    expect(classifyBody(cut.toString("base64"), "text/plain")).toEqual({ kind: "text", text: "héllo wörld " });
  });
});

describe("outbound calls", () => {
  test("an inbound request lists its outbound calls and opens one on click", () => {
    const parent = makeEvent({ http_req_path: "/checkout" });
    const child = makeEvent({
      parent_event_id: parent.event_id,
      http_is_outgoing: true,
      http_req_host: "payments.example.com",
      tls_server_name: "payments.example.com",
      tags: { tls: "decrypted" },
      http_req_path: "/charge",
      http_req_method: "POST",
    });
    const opened: string[] = [];
    render(<RequestDetail event={parent} outboundCalls={[child]} onOpen={(e) => opened.push(e.event_id)} />);
    const list = screen.getByRole("list", { name: "Outbound calls" });
    expect(list.textContent).toContain("https://payments.example.com/charge");
    fireEvent.click(within(list).getByRole("button"));
    expect(opened).toEqual([child.event_id]);
  });

  test("a proxy's CONNECT lists the calls made through its tunnel; a call made through one names it", () => {
    const connect = makeEvent({
      http_is_outgoing: true,
      http_req_method: "CONNECT",
      http_req_host: "api.example.test:443",
      http_req_path: "api.example.test:443",
      http_server_addr: "10.0.0.5:3128",
    });
    const call = makeEvent({
      parent_event_id: connect.event_id,
      http_is_outgoing: true,
      http_req_host: "api.example.test",
      http_req_path: "/v1/charges",
      http_req_method: "POST",
      tags: { tls: "decrypted", proxy: "10.0.0.5:3128" },
    });
    render(<RequestDetail event={connect} outboundCalls={[call]} />);
    expect(screen.getByTestId("detail-url").textContent).toBe("api.example.test:443");
    expect(screen.getByText("Calls through this tunnel (1)")).toBeDefined();
    expect(screen.getByRole("list", { name: "Calls through this tunnel" }).textContent).toContain("https://api.example.test/v1/charges");
    cleanup();
    render(<RequestDetail event={call} parent={connect} />);
    expect(screen.getByText("Through the proxy tunnel")).toBeDefined();
    expect(screen.queryByText("Made while serving")).toBeNull();
  });

  test("actions: Copy as cURL puts the command on the clipboard and says Copied!", async () => {
    let clipboard = "";
    Object.defineProperty(navigator, "clipboard", {
      configurable: true,
      value: {
        writeText: async (text: string) => {
          clipboard = text;
        },
      },
    });
    const saved: string[] = [];
    const event = makeEvent({ http_req_method: "DELETE", http_req_path: "/items/9" });
    render(<RequestDetail event={event} onSaveHar={(e) => saved.push(e.event_id)} link="http://x/link/abc" />);
    fireEvent.click(screen.getByRole("button", { name: "Copy as cURL" }));
    await waitFor(() => expect(screen.queryByRole("button", { name: "Copied!" })).not.toBeNull());
    expect(clipboard.startsWith("curl -X 'DELETE' 'http://localhost:8080/items/9'")).toBe(true);
    fireEvent.click(screen.getByRole("button", { name: "Save as HAR" }));
    expect(saved).toEqual([event.event_id]);
    fireEvent.click(screen.getByRole("button", { name: "Copy link" }));
    await screen.findAllByRole("button", { name: "Copied!" });
    expect(clipboard).toBe("http://x/link/abc");
  });
});

describe("Save as HAR", () => {
  test("downloads a HAR 1.2 file of the given events, built by the shared converter", async () => {
    const { downloadHar } = await import("~/ui/request-detail/har-download.ts");
    const blobs: Blob[] = [];
    const original = URL.createObjectURL;
    URL.createObjectURL = (blob: Blob) => {
      blobs.push(blob);
      return original.call(URL, blob);
    };
    const clicked: Array<{ download: string; href: string }> = [];
    const originalClick = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
      clicked.push({ download: this.download, href: this.href });
    };
    try {
      const parent = makeEvent({ http_req_method: "POST", http_req_body: b64('{"x":1}'), http_req_content_type: "application/json" });
      const child = makeEvent({ parent_event_id: parent.event_id, http_is_outgoing: true });
      downloadHar([parent, child], "one.har");
      expect(clicked[0]?.download).toBe("one.har");
      const har = JSON.parse(await blobs[0]!.text());
      expect(har.log.version).toBe("1.2");
      expect(har.log.entries.length).toBe(2);
      const entry = har.log.entries.find((e: { _eventId: string }) => e._eventId === parent.event_id);
      expect(entry.request.method).toBe("POST");
      expect(entry.request.postData.text).toBe('{"x":1}');
      expect(entry.response.status).toBe(200);
    } finally {
      URL.createObjectURL = original;
      HTMLAnchorElement.prototype.click = originalClick;
    }
  });
});
