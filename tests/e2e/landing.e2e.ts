import { describe, expect, test } from "bun:test";
import { browserSuite, hasHorizontalScroll, screenshot } from "./harness.ts";

// The landing page as a visitor uses it: the hero reacts, the picker gives the right commands and sticks, the demo
// loop runs, the calls to start report their click, and nothing runs off a phone's screen.
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const suite = browserSuite();

describe("landing page", () => {
  test("the hero's Game of Life gets live cells where the visitor clicks", async () => {
    await suite.page.setViewportSize(DESKTOP);
    await suite.page.goto(suite.server.baseUrl);
    expect(await suite.page.title()).toBe("Zero Code Network Tracer | Tapscope");
    const canvas = suite.page.getByLabel("Game of Life: click or drag to add cells");
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
    await suite.page.mouse.click(box.x + x, box.y + y);
    expect(await cellAt(x, y)).toBeGreaterThan(0);
    expect(Number(await canvas.getAttribute("data-live"))).toBeGreaterThan(0);
    await screenshot(suite.page, "landing-1440");
    expect(suite.pageErrors).toEqual([]);
  });

  test("the picker shows the install and run lines per language, and sticks with Python once scrolled past", async () => {
    await suite.page.setViewportSize(DESKTOP);
    await suite.page.goto(suite.server.baseUrl);
    const picker = suite.page.getByRole("region", { name: "Pick your language" });
    await picker.getByRole("button", { name: "Node.js" }).hover();
    expect(await picker.textContent()).toContain("Use Tapscope with Node.js");
    await picker.getByRole("button", { name: "PHP" }).click();
    expect(await picker.locator("[data-command]").allTextContents()).toEqual([
      `$ curl -fsSL ${suite.server.baseUrl}/install.sh | sh`,
      "$ tapscope run -- php artisan serve",
    ]);
    // Copy says so for 2 s, then offers itself again.
    await suite.page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    const copyRun = picker.getByRole("button", { name: "Copy: tapscope run -- php artisan serve" });
    await copyRun.click();
    await picker.getByRole("button", { name: "Copied" }).waitFor();
    expect(await suite.page.evaluate(() => navigator.clipboard.readText())).toBe("tapscope run -- php artisan serve");
    await picker.getByRole("button", { name: "Copy: tapscope run -- php artisan serve" }).waitFor({ timeout: 3000 });
    await suite.page.goto(suite.server.baseUrl);
    expect(await picker.locator("[data-command]").count()).toBe(0);
    await suite.page.mouse.wheel(0, 1600);
    await suite.page.waitForSelector("[data-stuck]");
    const top = (await picker.boundingBox())!.y;
    expect(top).toBeGreaterThanOrEqual(50);
    expect(top).toBeLessThan(70);
    expect(await picker.locator("[data-command]").nth(1).textContent()).toBe("$ tapscope run -- python main.py");
  });

  test("the demo loop types the command, streams rows, fades and starts over", async () => {
    await suite.page.setViewportSize(DESKTOP);
    await suite.page.goto(suite.server.baseUrl);
    const demo = suite.page.locator("[data-phase]");
    await demo.scrollIntoViewIfNeeded();
    await suite.page.waitForSelector('[data-phase="typing"]', { timeout: 5000 });
    await suite.page.waitForSelector('[data-phase="streaming"]', { timeout: 5000 });
    await suite.page.waitForSelector('[data-cycles="1"]', { timeout: 20_000 });
    expect(suite.pageErrors).toEqual([]);
  }, 40_000);

  test("phone: Start for free reports its click; nothing runs off screen", async () => {
    await suite.page.setViewportSize(PHONE);
    await suite.page.goto(suite.server.baseUrl);
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    await screenshot(suite.page, "landing-390");
    await suite.page.getByRole("link", { name: "Start for free" }).scrollIntoViewIfNeeded();
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    const reported = suite.page.waitForRequest(
      (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes("clickLogin_landingPage_startForFree"),
    );
    await suite.page.getByRole("link", { name: "Start for free" }).click();
    await reported;
    await suite.page.waitForURL(/\/login$/);
    // The header's Start and the footer's Login report where they were clicked.
    for (const [where, link] of [
      ["header", () => suite.page.getByRole("banner").getByRole("link", { name: "Start" })],
      ["footer", () => suite.page.getByRole("contentinfo").getByRole("link", { name: "Login" })],
    ] as const) {
      await suite.page.goto(`${suite.server.baseUrl}/pricing`);
      const tags = suite.page.waitForRequest(
        (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes(`clickLogin_navLink_${where}`),
      );
      await link().click();
      expect((await tags).headers()["x-tags"]).toContain("location=%2Fpricing");
    }
    expect(suite.pageErrors).toEqual([]);
  });
});
