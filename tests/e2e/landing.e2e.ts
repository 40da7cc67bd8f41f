import { describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { browserSuite, hasHorizontalScroll, screenshot } from "./harness.ts";

// The landing page as a visitor uses it: the hero reacts, the picker gives the right commands and sticks, the demo
// loop runs, the calls to start report their click, and nothing runs off a phone's screen.
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const suite = browserSuite();

/**
 * How much of the top of the screen is pinned: the height, from the top, down to which what shows in the middle of
 * the page belongs to a sticky or fixed element (the header, a pinned bar) rather than to the page as it scrolls.
 */
function pinnedHeight(page: Page): Promise<number> {
  return page.evaluate(() => {
    const isPinned = (el: Element | null): boolean => {
      for (let at = el; at; at = at.parentElement) {
        const position = getComputedStyle(at).position;
        if (position === "sticky" || position === "fixed") return at.getBoundingClientRect().top <= 1;
      }
      return false;
    };
    const x = document.documentElement.clientWidth / 2;
    let y = 0;
    while (y < window.innerHeight && isPinned(document.elementFromPoint(x, y))) y += 2;
    return y;
  });
}

/** The commands shown in the picker that do not show whole (cut at the box's edge, or past the screen's). */
function cutCommands(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("[data-command]"))
      .filter((el) => {
        const box = el.getBoundingClientRect();
        return el.scrollWidth > el.clientWidth + 1 || box.right > document.documentElement.clientWidth + 1;
      })
      .map((el) => el.textContent ?? ""),
  );
}

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

  test("the picker shows the install and run lines per language, and sticks with Python over the demo, not past it", async () => {
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
    await suite.page
      .getByRole("heading", { name: "From your terminal to a live dashboard" })
      .evaluate((el) => el.scrollIntoView({ block: "start" }));
    await suite.page.mouse.wheel(0, 100);
    await suite.page.waitForSelector("[data-stuck]");
    const top = (await picker.boundingBox())!.y;
    expect(top).toBeGreaterThanOrEqual(50);
    expect(top).toBeLessThan(70);
    expect(await picker.locator("[data-command]").nth(1).textContent()).toBe("$ tapscope run -- python main.py");
    expect(await cutCommands(suite.page)).toEqual([]);
    await screenshot(suite.page, "landing-1440-picker-pinned");
    // Past the demo it introduces, the picker goes with it: the next section's heading is not covered.
    const features = suite.page.getByRole("heading", { name: "Everything you would add logging for, without the logging" });
    await features.evaluate((el) => el.scrollIntoView({ block: "start" }));
    await suite.page.mouse.wheel(0, -80);
    await suite.page.waitForTimeout(300);
    expect((await picker.boundingBox())!.y).toBeLessThan(0);
    expect(await pinnedHeight(suite.page)).toBeLessThanOrEqual(60);
    const heading = (await features.boundingBox())!;
    expect(heading.y).toBeGreaterThanOrEqual(await pinnedHeight(suite.page));
    await screenshot(suite.page, "landing-1440-past-demo");
  });

  test("phone: the picker is not pinned, headings stay uncovered, and the install command shows whole", async () => {
    await suite.page.setViewportSize(PHONE);
    await suite.page.goto(suite.server.baseUrl);
    const picker = suite.page.getByRole("region", { name: "Pick your language" });
    await picker.getByRole("button", { name: "Python (Py)" }).click();
    expect(await picker.locator("[data-command]").count()).toBe(2);
    expect(await cutCommands(suite.page)).toEqual([]);
    expect((await picker.locator("[data-command]").first().textContent())!.endsWith("/install.sh | sh")).toBe(true);
    await picker.scrollIntoViewIfNeeded();
    await screenshot(suite.page, "landing-390-picker");
    // Scrolled on through the page: only the header stays, a small strip of the screen.
    for (const name of ["From your terminal to a live dashboard", "Everything you would add logging for, without the logging"]) {
      const heading = suite.page.getByRole("heading", { name });
      await heading.evaluate((el) => el.scrollIntoView({ block: "center" }));
      await suite.page.mouse.wheel(0, 200);
      await suite.page.waitForTimeout(300);
      expect(await pinnedHeight(suite.page)).toBeLessThanOrEqual(PHONE.height * 0.08);
      expect((await heading.boundingBox())!.y).toBeGreaterThanOrEqual(await pinnedHeight(suite.page));
    }
    expect(await suite.page.locator("[data-stuck]").count()).toBe(0);
    await screenshot(suite.page, "landing-390-scrolled");
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    expect(suite.pageErrors).toEqual([]);
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
