import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { createPublisher, type Publisher } from "~/agent/publish.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// Captured bytes in Chromium: an SVG response with a script, published to an anonymous link, opened in the
// request detail. It must show as text and never become a same-origin document (blob:/data: URL) that runs.

let server: RunningServer;
let browser: RunningBrowser;
let publisher: Publisher;
let linkUrl: string;
let page: Page;
let pageErrors: string[];
const ranRequests: string[] = [];

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>fetch("/api/svg-script-ran");window.top.__svgRan=1</script><rect width="10" height="10"/></svg>`;

beforeAll(async () => {
  server = await startServer();
  publisher = createPublisher({ endpoint: server.baseUrl, batchIntervalMs: 20 });
  linkUrl = (await publisher.join()).linkUrl!;
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  pageErrors = watchPageErrors(page);
  browser.context.on("request", (req) => {
    if (req.url().includes("svg-script-ran")) ranRequests.push(req.url());
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await publisher?.close();
  await server?.stop();
});

describe("captured bytes never run as the dashboard", () => {
  test("an SVG response body shows as its source text; no blob: or data: URL of an active type exists", async () => {
    await page.goto(linkUrl);
    const frame = liveFrame(page);
    await frame.locator.locator("[data-testid=connection][data-state=open]").waitFor();
    publisher.send(
      tracedEvent({
        http_req_path: "/logo.svg",
        http_resp_status_code: 200,
        http_resp_content_type: "image/svg+xml",
        http_resp_headers: [["Content-Type", "image/svg+xml"]],
        http_resp_body: Buffer.from(svg).toString("base64"),
        http_resp_body_size_bytes_wire: svg.length,
      }),
    );
    const row = frame.locator.locator("[role=row][data-event-id]").filter({ hasText: "/logo.svg" });
    await row.click();
    const body = frame.locator.getByLabel("Response body");
    await body.waitFor();
    expect(await body.getAttribute("data-body-kind")).toBe("text");
    expect(await body.locator("pre").textContent()).toBe(svg);
    expect(await body.locator("img, svg, object, embed, iframe").count()).toBe(0);

    // Every URL in the page and the frame: none may be a blob: or data: URL of anything but a raster image.
    for (const target of [page.mainFrame(), frame.frame()]) {
      const activeUrls = await target.evaluate(async () => {
        const raster = /^image\/(png|jpeg|gif|webp|avif|bmp|x-icon|vnd\.microsoft\.icon)$/;
        const found: string[] = [];
        for (const el of Array.from(document.querySelectorAll("*"))) {
          for (const attr of ["src", "href", "data", "srcdoc"]) {
            const value = el.getAttribute(attr);
            if (!value) continue;
            if (attr === "srcdoc") found.push(`srcdoc on ${el.tagName}`);
            else if (value.startsWith("blob:")) {
              const type = (await (await fetch(value)).blob()).type;
              if (!raster.test(type)) found.push(`${value} (${type})`);
            } else if (value.startsWith("data:") && value !== "data:," && !raster.test(value.slice(5).split(/[;,]/)[0] ?? ""))
              found.push(value.slice(0, 40));
          }
        }
        return found;
      });
      expect(activeUrls).toEqual([]);
    }
    await Bun.sleep(300);
    expect(ranRequests).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __svgRan?: number }).__svgRan)).toBeUndefined();
    await screenshot(page, "captured-svg-as-text");
    expect(pageErrors).toEqual([]);
  }, 30_000);

  test("pages and assets are served with nosniff and a script-restricting CSP", async () => {
    const pageRes = await fetch(linkUrl);
    expect(pageRes.headers.get("x-content-type-options")).toBe("nosniff");
    expect(pageRes.headers.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-[^']+'(;|$)/);
    expect(pageRes.headers.get("content-security-policy")).toContain("object-src 'none'");
    const css = /href="(\/assets\/[^"]+\.css)"/.exec(await pageRes.text())?.[1];
    expect(css).toBeDefined();
    expect((await fetch(`${server.baseUrl}${css}`)).headers.get("x-content-type-options")).toBe("nosniff");
  });
});
