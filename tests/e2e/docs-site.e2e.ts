import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";

// The docs and the operator's content pages as a reader uses them, on a phone and on a laptop.
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

describe("docs", () => {
  test("laptop: sidebar, page, on-page headings; a heading link scrolls; search narrows the sidebar; next page by client navigation", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.baseUrl}/docs/quickstart`);
    const sidebar = page.getByRole("navigation", { name: "Documentation" });
    await expect(sidebar.getByRole("link", { name: "Quickstart" }).getAttribute("aria-current")).resolves.toBe("page");
    const onPage = page.getByRole("navigation", { name: "On this page" });
    expect(await onPage.isVisible()).toBe(true);
    const firstHeading = (await onPage.getByRole("link").first().textContent()) ?? "";
    expect(firstHeading.length).toBeGreaterThan(0);
    await screenshot(page, "docs-quickstart-1440");
    const count = await sidebar.getByRole("link").count();
    await sidebar.getByRole("searchbox", { name: "Search the docs" }).fill("kubernetes");
    const results = sidebar.getByRole("list", { name: "Search results" }).getByRole("link");
    await results.first().waitFor();
    expect(await results.count()).toBeLessThan(count);
    await results.first().click();
    await page.waitForURL(/\/docs\/kubernetes$/);
    expect(await page.title()).toEndWith("| Tapscope");
    expect(await page.locator("article.docs-prose h1").textContent()).toBeTruthy();
    expect(pageErrors).toEqual([]);
  });

  test("phone: the menu folds above the page, code scrolls inside its block, nothing runs off screen", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.baseUrl}/docs/quickstart`);
    expect(await page.getByRole("navigation", { name: "Documentation" }).isVisible()).toBe(false);
    await page.getByText("Docs menu").click();
    expect(await page.getByRole("link", { name: "Quickstart" }).first().isVisible()).toBe(true);
    expect(await hasHorizontalScroll()).toBe(false);
    await screenshot(page, "docs-quickstart-390");
    await page.goto(`${server.baseUrl}/docs`);
    expect(await hasHorizontalScroll()).toBe(false);
    await screenshot(page, "docs-overview-390");
    expect(pageErrors).toEqual([]);
  });
});

describe("customers and changelog", () => {
  for (const viewport of [PHONE, DESKTOP]) {
    test(`${viewport.width} px: a case study's try link reports clickLogin_customersPage and goes to /login`, async () => {
      await page.setViewportSize(viewport);
      await page.goto(`${server.baseUrl}/customers/example-payments`);
      expect(await page.title()).toBe("How a payments team found a 400 ms retry loop in an afternoon | Tapscope");
      expect(await hasHorizontalScroll()).toBe(false);
      await screenshot(page, `customer-${viewport.width}`);
      const reported = page.waitForRequest(
        (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes("clickLogin_customersPage"),
      );
      await page.getByRole("link", { name: "Try Tapscope for free" }).click();
      expect((await reported).headers()["x-tags"]).toContain("location=%2Fcustomers%2Fexample-payments");
      await page.waitForURL(/\/login$/);
      await page.goto(`${server.baseUrl}/changelog`);
      expect(await hasHorizontalScroll()).toBe(false);
      await screenshot(page, `changelog-${viewport.width}`);
      expect(pageErrors).toEqual([]);
    });
  }
});
