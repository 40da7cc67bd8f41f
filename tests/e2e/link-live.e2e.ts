import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";
import { liveFrame, type RunningProgram, sh, startProgram, startUpstream } from "./live-harness.ts";

// A shared link end to end in Chromium: a real program under `tapscope run` without a token, the printed
// link opened, requests appearing live, filtered, opened, replayed with cURL and saved as HAR.

let server: RunningServer;
let program: RunningProgram;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];
const upstream = startUpstream();
const rows = () => liveFrame(page).locator.locator("[role=row][data-event-id]");
const rowFor = (text: string) => rows().filter({ hasText: text });

beforeAll(async () => {
  server = await startServer();
  program = await startProgram(server.baseUrl, { upstreamUrl: upstream.url });
  browser = await launchBrowser();
  await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl });
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  pageErrors = watchPageErrors(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await program?.stop();
  await server?.stop();
  upstream.stop();
});

const call = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${program.port}${path}`, init);

describe("shared link viewer", () => {
  test("the printed link opens the viewer: header, share box, countdown, live frame", async () => {
    expect(program.linkUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/link\/[A-Za-z0-9_-]{16,}\?expiry=/);
    await page.goto(program.linkUrl!);
    await page.getByText("Expires in").waitFor();
    expect(await page.getByTestId("countdown").textContent()).toMatch(/^Expires in (23h \d+m|1d 0h)$/);
    const linkId = new URL(program.linkUrl!).pathname.split("/").at(-1)!;
    expect(await page.getByTestId("share-url").textContent()).toBe(`${new URL(server.baseUrl).host}/link/${linkId}`);
    const iframe = page.locator("iframe");
    expect(await iframe.getAttribute("sandbox")).toBe("allow-modals allow-popups allow-scripts allow-same-origin allow-downloads");
    expect(await iframe.getAttribute("allow")).toBe("clipboard-write");
    expect(await iframe.getAttribute("src")).toMatch(/^\/iframer\?commit=[^&#]+#url=/);
    await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();

    await page.getByRole("button", { name: "Copy link" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`${server.baseUrl}/link/${linkId}`);
    await screenshot(page, "live-01-link-empty");
  });

  test("requests appear within a second, newest first, outbound calls marked", async () => {
    const started = Date.now();
    await call("/hello?q=first");
    await rowFor("/hello?q=first").waitFor({ timeout: 1000 });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1000);

    await call("/checkout");
    await call("/pixel.png");
    await call("/html");
    await call("/fail");
    await call("/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "x-replay": 'it\'s "quoted"' },
      body: JSON.stringify({ name: "O'Brien", n: 1 }),
    });
    await rowFor("/echo").waitFor();
    expect(await rows().count()).toBe(7);
    expect(await rows().first().textContent()).toContain("/echo");
    const outbound = rowFor("/v1/charges");
    expect(await outbound.getByLabel("outbound").count()).toBe(1);
    await screenshot(page, "live-02-link-rows");
  });

  test("filters: a chip applies on the server and the list; a bad filter shows its error", async () => {
    const input = page.getByRole("textbox", { name: "Filter" });
    await input.fill("response.status >= 500");
    await input.press("Enter");
    await page.getByRole("button", { name: "response.status >= 500", exact: true }).waitFor();
    await page.locator("[data-pending]").waitFor({ state: "detached" });
    await liveFrame(page).locator.getByTestId("event-count").filter({ hasText: "1 request (of 7)" }).waitFor();
    expect(await rows().count()).toBe(1);
    expect(await rows().first().textContent()).toContain("/fail");
    await call("/fail?again=1");
    await call("/hello?q=filtered-out");
    await rowFor("/fail?again=1").waitFor();
    await Bun.sleep(300);
    expect(await rowFor("filtered-out").count()).toBe(0);
    await screenshot(page, "live-03-link-filtered");

    await input.fill("response.status >>= 5");
    await input.press("Enter");
    const error = page.getByRole("alert");
    await error.waitFor();
    expect(await error.textContent()).toMatch(/\(at character \d+\)$/);
    expect(await input.inputValue()).toBe("response.status >>= 5");
    expect(await page.locator('[data-icon="alert"]').count()).toBe(1);
    await screenshot(page, "live-04-link-filter-error");

    await input.fill("");
    await page.getByRole("button", { name: "Remove filter response.status >= 500" }).click();
    await liveFrame(page).locator.getByTestId("event-count").filter({ hasText: "9 requests" }).waitFor();
  });

  test("open a request: outbound call nested under it; captured HTML stays text", async () => {
    await rowFor("/checkout").click();
    const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    const calls = detail.getByRole("list", { name: "Outbound calls" });
    expect(await calls.textContent()).toContain("/v1/charges");
    expect(await detail.locator("[data-culprit]").count()).toBe(1);
    await screenshot(page, "live-05-link-detail-outbound");

    await rowFor("/html").click();
    await detail.getByLabel("Response body").waitFor();
    expect(await detail.getByLabel("Response body").textContent()).toContain("<script>window.__pwned=1</script>");
    expect(
      await liveFrame(page)
        .frame()
        .evaluate(() => (window as unknown as { __pwned?: number }).__pwned),
    ).toBeUndefined();
    expect(await detail.locator("script").count()).toBe(0);

    await rowFor("/pixel.png").click();
    const img = detail.getByRole("img", { name: "Captured image/png body" });
    await img.waitFor();
    expect(await img.getAttribute("src")).toMatch(/^blob:/);
    expect(await img.evaluate((el) => (el as HTMLImageElement).naturalWidth)).toBe(1);
  });

  test("Copy as cURL replays the request against the program with the same response", async () => {
    await rowFor("/echo").click();
    const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    await detail.getByRole("button", { name: "Copy as cURL" }).click();
    await detail.getByRole("button", { name: "Copied!" }).waitFor();
    const command = await page.evaluate(() => navigator.clipboard.readText());
    expect(command).toContain("-X 'POST'");
    const direct = await (
      await call("/echo", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "O'Brien", n: 1 }),
      })
    ).text();
    const replayed = await sh(`${command} --silent --show-error`);
    expect(replayed).toBe(direct);
    expect(replayed).toBe('{"name":"O\'Brien","n":1}');
    await screenshot(page, "live-06-link-curl");
  });

  test("Save as HAR: this request, and all shown", async () => {
    const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    const [one] = await Promise.all([page.waitForEvent("download"), detail.getByRole("button", { name: "Save as HAR" }).click()]);
    const har = JSON.parse(readFileSync((await one.path())!, "utf8"));
    expect(har.log.version).toBe("1.2");
    expect(har.log.entries.length).toBe(1);
    expect(har.log.entries[0].request.method).toBe("POST");
    expect(har.log.entries[0].request.url).toBe(`http://127.0.0.1:${program.port}/echo`);
    expect(har.log.entries[0].request.postData.text).toBe('{"name":"O\'Brien","n":1}');
    expect(har.log.entries[0].response.content.text).toBe('{"name":"O\'Brien","n":1}');

    const [all] = await Promise.all([page.waitForEvent("download"), detail.getByRole("button", { name: "Save all shown as HAR" }).click()]);
    const allHar = JSON.parse(readFileSync((await all.path())!, "utf8"));
    expect(allHar.log.entries.length).toBe(await rows().count());
    expect(allHar.log.entries.some((e: { _isOutgoing: boolean }) => e._isOutgoing)).toBe(true);
  });

  test("a viewer opening the link late sees the earlier requests", async () => {
    const late = await browser.context.newPage();
    await late.goto(program.linkUrl!);
    await late.frameLocator("iframe").locator("[role=row][data-event-id]").filter({ hasText: "/hello?q=first" }).waitFor();
    expect(
      await late
        .frameLocator("iframe")
        .getByText(/2 watching/)
        .count(),
    ).toBe(1);
    await late.close();
    expect(pageErrors).toEqual([]);
  });

  test("an expired link shows the expired panel instead of the frame", async () => {
    const expiredPage = await browser.context.newPage();
    // The browser lives two days later: the link's expiry is in the past.
    await expiredPage.clock.install({ time: Date.now() + 2 * 86_400_000 });
    await expiredPage.goto(program.linkUrl!);
    await expiredPage.getByTestId("expired-panel").waitFor();
    expect(await expiredPage.getByTestId("expired-panel").textContent()).toBe(
      "This link has expired.Run the wrapper command again to get a new one.",
    );
    expect(await expiredPage.locator("iframe").count()).toBe(0);
    expect(await expiredPage.getByTestId("countdown").count()).toBe(0);
    await screenshot(expiredPage, "live-07-link-expired");
    await expiredPage.close();
  });

  test("/link without an id goes home", async () => {
    const home = await browser.context.newPage();
    await home.goto(`${server.baseUrl}/link`);
    await home.waitForURL(`${server.baseUrl}/`);
    await home.close();
  });
});
