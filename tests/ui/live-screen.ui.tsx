import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { LiveScreenView } from "~/ui/live/live-screen.tsx";

afterEach(cleanup);

let server: Server;
let origin = "";
let joinFailures = 0;
let hasSeen = true;
const joins: unknown[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      if (req.url === "/api/JoinSubscriber") {
        joins.push(JSON.parse(raw));
        if (joinFailures > 0) {
          joinFailures--;
          res.statusCode = 503;
          res.setHeader("x-trace-id", "tr-9");
          return res.end(JSON.stringify({ error: "live view unavailable" }));
        }
        return res.end(JSON.stringify({ websocketUrl: `ws://${req.headers.host}/api/LiveSubscribe?ticket=t${joins.length}` }));
      }
      if (req.url === "/api/HasSeenPublisher") return res.end(JSON.stringify({ hasSeenPublisher: hasSeen }));
      if (req.url === "/api/GenerateNamespaceToken") return res.end(JSON.stringify({ token: "tok" }));
      res.statusCode = 404;
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const happy = (window as unknown as { happyDOM: { setURL: (u: string) => void; settings: Record<string, boolean> } }).happyDOM;
  happy.setURL(`${origin}/dashboard/acme/live?event=ev-7`);
  happy.settings.disableIframePageLoading = true;
});
afterAll(() => server.close());

describe("Live screen", () => {
  test("joins the namespace and embeds the sandboxed frame with the socket URL, namespace and opened event", async () => {
    joinFailures = 0;
    hasSeen = true;
    render(<LiveScreenView namespaceId="ns-1" orgId="org-1" commitHash="c0ffee" />);
    const frame = (await waitFor(() => {
      const f = document.querySelector("iframe");
      if (!f) throw new Error("no frame yet");
      return f;
    })) as HTMLIFrameElement;
    const src = frame.getAttribute("src")!;
    expect(src.startsWith("/iframer?commit=c0ffee&namespace=ns-1&event=ev-7#url=")).toBe(true);
    expect(decodeURIComponent(src.split("#url=")[1]!)).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/api\/LiveSubscribe\?ticket=t\d+$/);
    expect(frame.getAttribute("sandbox")).toBe("allow-modals allow-popups allow-scripts allow-same-origin allow-downloads");
    expect(joins.at(-1)).toEqual({ namespaceId: "ns-1" });
    await Bun.sleep(100);
    expect(screen.queryByRole("dialog")).toBeNull();
  });

  test("a failed join says why and retries on request; onboarding shows when no publisher was seen", async () => {
    joinFailures = 1;
    hasSeen = false;
    render(<LiveScreenView namespaceId="ns-2" orgId="org-2" commitHash="c0ffee" />);
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("Could not open the live view: The service is unavailable right now. Try again in a moment.");
    expect(alert.textContent).not.toContain("unexpected status code");
    expect(within(alert).getByTestId("error-details").textContent).toBe("Details: status 503, trace id tr-9");
    await waitFor(() => expect(screen.queryByRole("heading", { name: "Connect your backend" })).not.toBeNull());
    fireEvent.click(screen.getByRole("button", { name: "I'll do this later" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Retry" }));
    await waitFor(() => expect(document.querySelector("iframe")).not.toBeNull());
  });
});
