import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, render, screen, within } from "@testing-library/react";
import type { ResultRow } from "~/lib/protocol/query.ts";
import { ResultsList } from "~/ui/explorer/results-list.tsx";
import { toCurl } from "~/ui/request-detail/curl.ts";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { timingSteps } from "~/ui/request-detail/timing.ts";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

const decrypted = makeEvent({
  http_is_outgoing: true,
  http_req_method: "POST",
  http_req_host: "api.stripe.com",
  http_req_path: "/v1/charges",
  tls_server_name: "api.stripe.com",
  timing_connect: 2_000,
  timing_tls: 30_000,
  timing_send: 100,
  timing_wait: 10_000,
  timing_receive: 500,
  tags: { tls: "decrypted", tls_alpn: "h2", kind: "payments" },
});

const passedThrough = makeEvent({
  protocol: "tcp",
  http_is_outgoing: true,
  http_req_method: "",
  http_req_path: "",
  http_resp_status_code: 0,
  http_server_addr: "10.0.0.9:443",
  tls_server_name: "pinned.example.com",
  timing_tls: -1,
  tags: {
    tls: "not decrypted",
    tls_reason: "client rejected the certificate",
    tls_detail: '<img src=x onerror="alert(1)"> alert 42',
  },
});

describe("request detail of TLS connections", () => {
  test("a decrypted call: https URL, a lock, and a TLS section with server name, ALPN, state and handshake", () => {
    render(<RequestDetail event={decrypted} />);
    expect(screen.getByTestId("detail-url").textContent).toBe("https://api.stripe.com/v1/charges");
    expect(screen.getByTestId("detail-tls").textContent).toBe("TLS decrypted · h2 · api.stripe.com");
    // A drawn lock, not an emoji a machine without an emoji font shows as a box.
    expect(screen.getByTestId("detail-tls").querySelector("svg[data-icon=lock]")).not.toBeNull();
    const tls = screen.getByRole("table", { name: "TLS" });
    const rows = [...tls.querySelectorAll("tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));
    expect(rows).toEqual([
      ["server name", "api.stripe.com"],
      ["protocol (ALPN)", "h2"],
      ["capture", "decrypted"],
      ["handshake", "30.0ms"],
    ]);
    // The TLS tags are not repeated among the details' tags; other tags still are.
    const details = screen.getByRole("table", { name: "Details" });
    const detailRows = [...details.querySelectorAll("tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));
    expect(detailRows).toContainEqual(["kind", "payments"]);
    expect(detailRows.map(([name]) => name).filter((name) => name?.startsWith("tls"))).toEqual([]);
  });

  test("the latency breakdown has a TLS handshake step between connect and send when it applies", () => {
    const steps = timingSteps(decrypted);
    expect(steps.map((s) => [s.label, s.start, s.duration])).toEqual([
      ["connect", 0, 2_000],
      ["TLS handshake", 2_000, 30_000],
      ["send", 32_000, 100],
      ["wait", 32_100, 10_000],
      ["receive", 42_100, 500],
    ]);
    expect(steps.find((s) => s.isCulprit)?.label).toBe("TLS handshake");
    render(<RequestDetail event={decrypted} />);
    expect(within(screen.getByRole("list", { name: "Timing" })).getByText("TLS handshake")).toBeTruthy();
    // A later exchange on the same connection: no connect, no handshake.
    expect(timingSteps({ ...decrypted, timing_connect: -1, timing_tls: -1 }).map((s) => s.label)).toEqual(["send", "wait", "receive"]);
  });

  test("a connection not decrypted: its reason and detail, shown as text only", () => {
    const { container } = render(<RequestDetail event={passedThrough} />);
    expect(screen.getByTestId("detail-url").textContent).toBe("pinned.example.com (10.0.0.9:443, tcp)");
    const tls = screen.getByRole("table", { name: "TLS" });
    expect(tls.textContent).toContain("pinned.example.com");
    expect(tls.textContent).toContain("not decrypted: client rejected the certificate");
    expect(tls.textContent).toContain('<img src=x onerror="alert(1)"> alert 42');
    expect(container.querySelector("img")).toBeNull();
    expect(screen.getByTestId("detail-tls").textContent).toBe("TLS not decrypted: client rejected the certificate (pinned.example.com)");
  });

  test("Copy as cURL uses https for a decrypted call, http for a plaintext one", () => {
    expect(toCurl(decrypted).command).toContain("'https://api.stripe.com/v1/charges'");
    expect(toCurl({ ...decrypted, tags: {} }).command).toContain("'http://api.stripe.com/v1/charges'");
  });

  test("a plaintext exchange has no TLS section and an http URL, even with a server name elsewhere", () => {
    render(<RequestDetail event={makeEvent({ http_is_outgoing: true, http_req_host: "plain.test", http_req_path: "/x", tags: {} })} />);
    expect(screen.getByTestId("detail-url").textContent).toBe("http://plain.test/x");
    expect(screen.queryByRole("table", { name: "TLS" })).toBeNull();
  });
});

describe("explorer rows", () => {
  const row = (e: typeof decrypted): ResultRow => ({ ...e });
  const plain = makeEvent({ http_is_outgoing: true, http_req_host: "plain.test", http_req_path: "/y", tags: {}, time: decrypted.time - 1 });

  test("a lock for decrypted calls with an https URL, 'not decrypted' with its reason for the others, nothing for plaintext", () => {
    render(
      <ResultsList
        rows={[row(decrypted), row(plain), row({ ...passedThrough, time: decrypted.time - 2 })]}
        tz="UTC"
        sort={{ key: "time", dir: "desc" }}
        onSort={() => undefined}
        selectedId={null}
        onSelect={() => undefined}
      />,
    );
    const rows = screen.getAllByRole("row").slice(1);
    const urlCell = (r: HTMLElement) => within(r).getAllByRole("cell")[3]!;
    expect(urlCell(rows[0]!).textContent).toBe("https://api.stripe.com/v1/charges");
    expect(within(rows[0]!).getByRole("img", { name: "TLS, decrypted" })).toBeTruthy();
    expect(urlCell(rows[1]!).textContent).toBe("http://plain.test/y");
    expect(within(rows[1]!).queryByRole("img", { name: "TLS, decrypted" })).toBeNull();
    expect(rows[1]!.textContent).not.toContain("not decrypted");
    const marker = within(rows[2]!).getByText("not decrypted");
    expect(marker.getAttribute("title")).toBe("TLS not decrypted: client rejected the certificate");
    expect(urlCell(rows[2]!).textContent).toBe("not decryptedpinned.example.com (10.0.0.9:443, tcp)");
  });
});
