import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { WebSocketServer } from "ws";
import { EXPIRED_TOOLTIP } from "~/ui/link/countdown.tsx";
import { formatCountdown, parseLinkExpiry } from "~/ui/link/link-expiry.ts";
import { EXPIRED_HINT, EXPIRED_TITLE, LinkViewer, linkIdFromPath, UNKNOWN_LINK } from "~/ui/link/link-page.tsx";

afterEach(cleanup);

describe("countdown format", () => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  test.each([
    [2 * d + 3 * h + 59 * m, "2d 3h"],
    [d + s, "1d 0h"],
    [d, "24h 0m"],
    [5 * h + 7 * m + 30 * s, "5h 7m"],
    [h, "1h 0m"],
    [59 * m + 59 * s, "59m 59s"],
    [4 * m + 9 * s + 999, "4m 9s"],
    [60 * s, "1m 0s"],
    [42 * s + 500, "42s"],
    [0, "0s"],
    [-5 * s, "0s"],
  ])("%d ms left shows %s", (ms, text) => {
    expect(formatCountdown(ms)).toBe(text);
  });
});

describe("link URL validation", () => {
  test("expiry missing, invalid, ISO and epoch", () => {
    expect(() => parseLinkExpiry("ws://h/api/LiveSubscribe?link_id=a")).toThrow(`Couldn't find "expiry" param in URL`);
    expect(() => parseLinkExpiry("ws://h/api/LiveSubscribe?expiry=tomorrow")).toThrow("Invalid date");
    expect(parseLinkExpiry("ws://h/x?expiry=2030-01-02T03:04:05.000Z").toISOString()).toBe("2030-01-02T03:04:05.000Z");
    expect(parseLinkExpiry("ws://h/x?expiry=1900000000").getTime()).toBe(1_900_000_000_000);
  });

  test("the link id is the last path segment", () => {
    expect(linkIdFromPath("abc123")).toBe("abc123");
    expect(linkIdFromPath("something/abc123/")).toBe("abc123");
    expect(linkIdFromPath("")).toBeNull();
  });
});

describe("LinkViewer against a real server", () => {
  let server: Server;
  let wss: WebSocketServer;
  let origin = "";
  const links = new Map<string, string>();
  const pings: Array<{ linkId: string | null; at: number }> = [];
  const connections: Array<{ linkId: string | null; at: number; close: () => void }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/api/GetLink" && req.method === "POST") {
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
          const { linkId } = JSON.parse(body) as { linkId: string };
          const linkUrl = links.get(linkId);
          res.setHeader("content-type", "application/json");
          if (!linkUrl) {
            res.statusCode = 404;
            res.setHeader("x-trace-id", "trace-1");
            res.end(JSON.stringify({ error: "link not found" }));
            return;
          }
          res.end(JSON.stringify({ linkUrl }));
        });
        return;
      }
      res.statusCode = 404;
      res.end();
    });
    wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname !== "/api/PingLink") return socket.destroy();
      wss.handleUpgrade(req, socket, head, (ws) => {
        const linkId = url.searchParams.get("link_id");
        connections.push({ linkId, at: Date.now(), close: () => ws.close() });
        ws.on("message", (data) => {
          if (String(data) === "ping") pings.push({ linkId, at: Date.now() });
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    (window as unknown as { happyDOM: { setURL: (u: string) => void; settings: Record<string, unknown> } }).happyDOM.setURL(
      `${origin}/link/x`,
    );
    (window as unknown as { happyDOM: { settings: { disableIframePageLoading: boolean } } }).happyDOM.settings.disableIframePageLoading =
      true;
  });
  afterAll(() => {
    wss.close();
    server.close();
  });

  test("an expired link shows the expired panel, no frame, no countdown, no ping", async () => {
    links.set("expiredlink1", `ws://127.0.0.1/api/LiveSubscribe?link_id=expiredlink1&expiry=${new Date(Date.now() - 1000).toISOString()}`);
    render(<LinkViewer linkId="expiredlink1" commitHash="abc123" />);
    expect(screen.queryByRole("status", { name: "Loading" })).not.toBeNull();
    const panel = await screen.findByTestId("expired-panel");
    expect(screen.queryByTestId("share-url")).toBeNull();
    expect(panel.textContent).toBe(`${EXPIRED_TITLE}${EXPIRED_HINT}`);
    expect(document.querySelector("iframe")).toBeNull();
    expect(screen.queryByTestId("countdown")).toBeNull();
    await Bun.sleep(300);
    expect(connections.some((c) => c.linkId === "expiredlink1")).toBe(false);
  });

  test("a live link: share box, countdown, sandboxed frame with commit and url, pings every second, reconnects after close", async () => {
    const expiry = new Date(Date.now() + 2 * 3600_000 + 5 * 60_000 + 30_000);
    const linkUrl = `${origin}/link/livelink0001?expiry=${encodeURIComponent(expiry.toISOString())}`;
    links.set("livelink0001", linkUrl);
    let clipboard = "";
    Object.defineProperty(navigator, "clipboard", {
      configurable: true,
      value: {
        writeText: async (t: string) => {
          clipboard = t;
        },
      },
    });

    render(<LinkViewer linkId="livelink0001" commitHash="abc123" />);
    const frame = (await waitFor(() => {
      const f = document.querySelector("iframe");
      if (!f) throw new Error("no frame yet");
      return f;
    })) as HTMLIFrameElement;
    expect(frame.getAttribute("src")).toBe(`/iframer?commit=abc123#url=${encodeURIComponent(linkUrl)}`);
    expect(frame.getAttribute("sandbox")).toBe("allow-modals allow-popups allow-scripts allow-same-origin allow-downloads");
    expect(frame.getAttribute("allow")).toBe("clipboard-write");
    expect(screen.getByTestId("countdown").textContent).toBe("Expires in 2h 5m");
    expect(screen.getByTestId("share-url").textContent).toBe(`${origin.replace("http://", "")}/link/livelink0001`);

    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Copy link" }));
    });
    expect(clipboard).toBe(`${origin}/link/livelink0001`);
    expect(screen.getByRole("button", { name: "Copied" }).querySelector('[data-icon="check"]')).not.toBeNull();

    await Bun.sleep(2300);
    expect(pings.filter((p) => p.linkId === "livelink0001").length).toBeGreaterThanOrEqual(1);
    // The checkmark lasts 2 seconds: the button is back to "Copy link".
    expect(screen.queryByRole("button", { name: "Copied" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Copy link" })).not.toBeNull();

    const before = connections.filter((c) => c.linkId === "livelink0001");
    expect(before.length).toBe(1);
    const closedAt = Date.now();
    before[0]!.close();
    await waitFor(() => expect(connections.filter((c) => c.linkId === "livelink0001").length).toBe(2), { timeout: 3000 });
    const reopenedAt = connections.filter((c) => c.linkId === "livelink0001")[1]!.at;
    expect(reopenedAt - closedAt).toBeGreaterThanOrEqual(900);
    expect(reopenedAt - closedAt).toBeLessThan(2000);
  }, 15_000);

  test("a link that runs out while open shows the expired warning with its tooltip", async () => {
    links.set("soonlink0001", `ws://127.0.0.1/api/LiveSubscribe?link_id=soonlink0001&expiry=${new Date(Date.now() + 1500).toISOString()}`);
    render(<LinkViewer linkId="soonlink0001" commitHash="abc123" />);
    expect((await screen.findByTestId("countdown")).textContent).toMatch(/^Expires in [12]s$/);
    const expired = await screen.findByTestId("countdown-expired", {}, { timeout: 3000 });
    expect(expired.getAttribute("title")).toBe(EXPIRED_TOOLTIP);
    expect(document.querySelector("iframe")).not.toBeNull();
  });

  test("GetLink errors are shown: unknown link, missing expiry", async () => {
    render(<LinkViewer linkId="nosuchlink01" commitHash="abc123" />);
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).not.toContain("unexpected status code");
    expect(within(alert).getByText(UNKNOWN_LINK)).toBeDefined();
    expect(within(alert).getByTestId("error-details").textContent).toBe("Details: status 404, trace id trace-1");
    // Nothing to share: no share box for a link that does not exist.
    expect(screen.queryByTestId("share-url")).toBeNull();
    cleanup();
    links.set("noexpiry0001", "ws://127.0.0.1/api/LiveSubscribe?link_id=noexpiry0001");
    render(<LinkViewer linkId="noexpiry0001" commitHash="abc123" />);
    expect((await screen.findByRole("alert")).textContent).toBe(`Couldn't find "expiry" param in URL`);
    expect(screen.queryByTestId("error-details")).toBeNull();
  });
});
