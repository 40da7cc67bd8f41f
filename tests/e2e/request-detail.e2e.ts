import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Frame, Page } from "playwright-core";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";
import { liveFrame, type RunningProgram, startProgram } from "./live-harness.ts";

// The request detail at DevTools' level, in Chromium at 1440 and 390 px, on a real program under `tapscope run`
// (tests/e2e/live-program.ts): its sections, the payload's tables, the JSON tree, Copy as, and a served request whose
// outbound call is the slow part flagged as the culprit beside the program's own time.

let server: RunningServer;
let program: RunningProgram;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];
// The third-party API the program's /checkout calls: slow, so the call is the culprit of the request.
const slowUpstream = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async () => {
    await Bun.sleep(400);
    return Response.json({ charged: true });
  },
});

const rowFor = (text: string) => liveFrame(page).locator.locator("[role=row][data-event-id]").filter({ hasText: text });
const detail = () => liveFrame(page).locator.getByRole("region", { name: "Request detail" });
const call = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${program.port}${path}`, init);
const echoed = JSON.stringify({ order: { id: 7, items: [{ sku: "A1", qty: 2 }] }, note: 'say "hi"' });

beforeAll(async () => {
  server = await startServer();
  program = await startProgram(server.baseUrl, { upstreamUrl: `http://127.0.0.1:${slowUpstream.port}` });
  browser = await launchBrowser();
  await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl });
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  pageErrors = watchPageErrors(page);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(program.linkUrl!);
  await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();
  await call("/echo?user=bob&tags=a+b", {
    method: "POST",
    body: echoed,
    headers: { "content-type": "application/json", cookie: "theme=dark; lang=en" },
  });
  await call("/checkout");
  await rowFor("/echo").waitFor();
  await rowFor("/checkout").waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await program?.stop();
  await server?.stop();
  slowUpstream.stop(true);
});

async function closeDetail(): Promise<void> {
  await detail().getByRole("button", { name: "Close detail" }).click();
  await detail().waitFor({ state: "detached" });
}

/** Buttons and inputs that reach past the frame's sides. */
function offScreen(target: Frame): Promise<string[]> {
  return target.evaluate(() => {
    const width = document.documentElement.clientWidth;
    return Array.from(document.querySelectorAll("button, input, nav"))
      .map((el) => ({ el, r: el.getBoundingClientRect() }))
      .filter(({ r }) => r.width > 0 && (r.right > width + 1 || r.left < -1))
      .map(({ el, r }) => `${el.tagName} "${(el.textContent ?? "").trim().slice(0, 30)}" ${Math.round(r.left)}..${Math.round(r.right)}`);
  });
}

describe("the request detail", () => {
  for (const viewport of [
    { name: "desktop", width: 1440, height: 900 },
    { name: "phone", width: 390, height: 844 },
  ]) {
    test(`${viewport.name} (${viewport.width} px): sections, payload tables, the JSON tree and Copy as`, async () => {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      await rowFor("/echo").click();
      const nav = detail().getByRole("navigation", { name: "Sections" });
      await nav.waitFor();
      expect(await nav.getByRole("button").allTextContents()).toEqual([
        "General",
        "Timing",
        "Calls made (0)",
        expect.stringMatching(/^Headers \(\d+\)$/),
        "Payload",
        "Response",
      ]);
      expect(await offScreen(liveFrame(page).frame())).toEqual([]);
      await screenshot(page, `request-detail-${viewport.name}-1-general`);

      await nav.getByRole("button", { name: "Payload" }).click();
      expect(await nav.getByRole("button", { name: "Payload" }).getAttribute("aria-current")).toBe("true");
      const query = detail().getByRole("table", { name: "Query string" });
      expect(await query.locator("tbody tr").allInnerTexts()).toEqual(["user\tbob", "tags\ta b"]);
      // The capture engine redacted the cookies' values: the names stay, and the detail says a replay needs the real ones.
      expect(await detail().getByRole("table", { name: "Request cookies" }).locator("tbody tr").allInnerTexts()).toEqual([
        "theme\t[redacted]",
        "lang\t[redacted]",
      ]);
      expect(await detail().getByTestId("redacted-notice").textContent()).toMatch(/^Redacted when captured: cookie\. A copied request/i);
      expect(await query.isVisible()).toBe(true);
      await screenshot(page, `request-detail-${viewport.name}-2-payload`);

      await nav.getByRole("button", { name: "Response" }).click();
      const response = detail().getByLabel("Response body");
      const tree = response.getByRole("list", { name: "JSON tree" });
      expect(await tree.isVisible()).toBe(true);
      expect(await tree.locator('[data-json-type="string"]').allTextContents()).toEqual(['"A1"', '"say \\"hi\\""']);
      await tree.getByRole("button", { name: "Close order" }).click();
      expect(await tree.textContent()).not.toContain("A1");
      await response.getByRole("searchbox", { name: "Find in response" }).fill("hi");
      expect(await response.locator("mark").allTextContents()).toEqual(["hi"]);
      await screenshot(page, `request-detail-${viewport.name}-3-response`);
      await response.getByRole("searchbox", { name: "Find in response" }).fill("");

      await detail().getByRole("button", { name: "Copy as… ▾" }).click();
      await detail().getByRole("button", { name: "Copy as Python requests" }).click();
      await detail().getByRole("button", { name: "Copied!" }).waitFor();
      const snippet = await liveFrame(page)
        .frame()
        .evaluate(() => navigator.clipboard.readText());
      expect(snippet).toContain(`"http://127.0.0.1:${program.port}/echo?user=bob&tags=a+b"`);
      expect(snippet).toMatch(/"cookie": "theme=\[redacted\]; lang=\[redacted\]"/i);
      expect(await offScreen(liveFrame(page).frame())).toEqual([]);
      await screenshot(page, `request-detail-${viewport.name}-4-copy-as`);
      await detail().getByRole("button", { name: "Copy as… ▾" }).click();
      await closeDetail();
    }, 60_000);

    test(`${viewport.name} (${viewport.width} px): a served request whose call is slow flags the call, beside the program's own time`, async () => {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      await rowFor("/checkout").click();
      const nav = detail().getByRole("navigation", { name: "Sections" });
      await nav.getByRole("button", { name: "Calls made (1)" }).click();
      const calls = detail().getByRole("list", { name: "Outbound calls" });
      const culprit = calls.locator("[data-culprit]");
      expect(await culprit.count()).toBe(1);
      expect(await culprit.textContent()).toContain("/v1/charges");
      // One culprit across the timing and the calls: the processing step is not flagged as well.
      expect(await detail().locator("[data-culprit]").count()).toBe(1);
      const own = calls.getByTestId("own-time");
      expect(await own.textContent()).toMatch(/^own timethe program's own work, not in any call\d/);
      expect(await own.getAttribute("data-culprit")).toBeNull();
      expect(await culprit.isVisible()).toBe(true);
      expect(await offScreen(liveFrame(page).frame())).toEqual([]);
      await screenshot(page, `request-detail-${viewport.name}-5-culprit`);
      await closeDetail();
      expect(pageErrors).toEqual([]);
    }, 60_000);
  }
});
