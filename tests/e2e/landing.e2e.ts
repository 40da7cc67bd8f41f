import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";

// The landing page as a visitor uses it: the hero reacts, the picker gives the right commands and sticks, the demo
// loop runs, the calls to start report their click, and nothing runs off a phone's screen.
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  server = await startServer();
  browser = await launchBrowser();
  page = await browser.context.newPage();
  pageErrors = watchPageErrors(page);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const hasHorizontalScroll = () => page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

describe("landing page", () => {
  test("the hero's Game of Life gets live cells where the visitor clicks", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(server.baseUrl);
    expect(await page.title()).toBe("Zero Code Network Tracer | Tapscope");
    const canvas = page.getByLabel("Game of Life: click or drag to add cells");
    await canvas.waitFor();
    const box = (await canvas.boundingBox())!;
    // An empty corner's cell: clicking makes it (and its neighbours) live.
    const cellAt = async (x: number, y: number) =>
      canvas.evaluate(
        (el, [px, py]) => {
          const c = el as HTMLCanvasElement;
          const dpr = c.width / c.clientWidth;
          return c.getContext("2d")!.getImageData(Math.floor(px! * dpr), Math.floor(py! * dpr), 1, 1).data[3]!;
        },
        [x, y],
      );
    const x = 24 * 10 + 12;
    const y = 24 * 3 + 12;
    await page.mouse.click(box.x + x, box.y + y);
    expect(await cellAt(x, y)).toBeGreaterThan(0);
    expect(Number(await canvas.getAttribute("data-live"))).toBeGreaterThan(0);
    await screenshot(page, "landing-1440");
    expect(pageErrors).toEqual([]);
  });

  test("the picker shows the install and run lines per language, and sticks with Python once scrolled past", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(server.baseUrl);
    const picker = page.getByRole("region", { name: "Pick your language" });
    await picker.getByRole("button", { name: "Node.js" }).hover();
    expect(await picker.textContent()).toContain("Use Tapscope with Node.js");
    await picker.getByRole("button", { name: "PHP" }).click();
    expect(await picker.locator("[data-command]").allTextContents()).toEqual([
      `$ curl -fsSL ${server.baseUrl}/install.sh | sh`,
      "$ tapscope run -- php artisan serve",
    ]);
    await page.goto(server.baseUrl);
    expect(await picker.locator("[data-command]").count()).toBe(0);
    await page.mouse.wheel(0, 1600);
    await page.waitForSelector("[data-stuck]");
    const top = (await picker.boundingBox())!.y;
    expect(top).toBeGreaterThanOrEqual(50);
    expect(top).toBeLessThan(70);
    expect(await picker.locator("[data-command]").nth(1).textContent()).toBe("$ tapscope run -- python main.py");
  });

  test("the demo loop types the command, streams rows, fades and starts over", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(server.baseUrl);
    const demo = page.locator("[data-phase]");
    await demo.scrollIntoViewIfNeeded();
    await page.waitForSelector('[data-phase="typing"]', { timeout: 5000 });
    await page.waitForSelector('[data-phase="streaming"]', { timeout: 5000 });
    await page.waitForSelector('[data-cycles="1"]', { timeout: 20_000 });
    expect(pageErrors).toEqual([]);
  }, 40_000);

  test("phone: Start for free reports its click; nothing runs off screen", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(server.baseUrl);
    expect(await hasHorizontalScroll()).toBe(false);
    await screenshot(page, "landing-390");
    await page.getByRole("link", { name: "Start for free" }).scrollIntoViewIfNeeded();
    expect(await hasHorizontalScroll()).toBe(false);
    const reported = page.waitForRequest(
      (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes("clickLogin_landingPage_startForFree"),
    );
    await page.getByRole("link", { name: "Start for free" }).click();
    await reported;
    await page.waitForURL(/\/login$/);
    // The header's Start and the footer's Login report where they were clicked.
    for (const [where, link] of [
      ["header", () => page.getByRole("banner").getByRole("link", { name: "Start" })],
      ["footer", () => page.getByRole("contentinfo").getByRole("link", { name: "Login" })],
    ] as const) {
      await page.goto(`${server.baseUrl}/pricing`);
      const tags = page.waitForRequest(
        (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes(`clickLogin_navLink_${where}`),
      );
      await link().click();
      expect((await tags).headers()["x-tags"]).toContain("location=%2Fpricing");
    }
    expect(pageErrors).toEqual([]);
  });
});
