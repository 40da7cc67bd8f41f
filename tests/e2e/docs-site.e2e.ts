import { describe, expect, test } from "bun:test";
import { browserSuite, hasHorizontalScroll, screenshot } from "./harness.ts";

// The docs and the operator's content pages as a reader uses them, on a phone and on a laptop.
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const suite = browserSuite();

describe("docs", () => {
  test("laptop: sidebar, page, on-page headings; a heading link scrolls; search narrows the sidebar; next page by client navigation", async () => {
    await suite.page.setViewportSize(DESKTOP);
    await suite.page.goto(`${suite.server.baseUrl}/docs/quickstart`);
    const sidebar = suite.page.getByRole("navigation", { name: "Documentation" });
    await expect(sidebar.getByRole("link", { name: "Quickstart" }).getAttribute("aria-current")).resolves.toBe("page");
    const onPage = suite.page.getByRole("navigation", { name: "On this page" });
    expect(await onPage.isVisible()).toBe(true);
    const firstHeading = (await onPage.getByRole("link").first().textContent()) ?? "";
    expect(firstHeading.length).toBeGreaterThan(0);
    await screenshot(suite.page, "docs-quickstart-1440");
    const count = await sidebar.getByRole("link").count();
    await sidebar.getByRole("searchbox", { name: "Search the docs" }).fill("kubernetes");
    const results = sidebar.getByRole("list", { name: "Search results" }).getByRole("link");
    await results.first().waitFor();
    expect(await results.count()).toBeLessThan(count);
    await results.first().click();
    await suite.page.waitForURL(/\/docs\/kubernetes$/);
    expect(await suite.page.title()).toEndWith("| Tapscope");
    expect(await suite.page.locator("article.docs-prose h1").textContent()).toBe("Kubernetes");
    expect(suite.pageErrors).toEqual([]);
  });

  test("phone: the menu folds above the page, code scrolls inside its block, nothing runs off screen", async () => {
    await suite.page.setViewportSize(PHONE);
    await suite.page.goto(`${suite.server.baseUrl}/docs/quickstart`);
    expect(await suite.page.getByRole("navigation", { name: "Documentation" }).isVisible()).toBe(false);
    await suite.page.getByText("Docs menu").click();
    expect(await suite.page.getByRole("link", { name: "Quickstart" }).first().isVisible()).toBe(true);
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    await screenshot(suite.page, "docs-quickstart-390");
    await suite.page.goto(`${suite.server.baseUrl}/docs`);
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    await screenshot(suite.page, "docs-overview-390");
    expect(suite.pageErrors).toEqual([]);
  });
});

describe("customers and changelog", () => {
  for (const viewport of [PHONE, DESKTOP]) {
    test(`${viewport.width} px: a case study's try link reports clickLogin_customersPage and goes to /login`, async () => {
      await suite.page.setViewportSize(viewport);
      await suite.page.goto(`${suite.server.baseUrl}/customers/example-payments`);
      expect(await suite.page.title()).toBe("How a payments team found a 400 ms retry loop in an afternoon | Tapscope");
      expect(await hasHorizontalScroll(suite.page)).toBe(false);
      await screenshot(suite.page, `customer-${viewport.width}`);
      const reported = suite.page.waitForRequest(
        (r) => r.url().endsWith("/api/Event") && (r.headers()["x-tags"] ?? "").includes("clickLogin_customersPage"),
      );
      await suite.page.getByRole("link", { name: "Try Tapscope for free" }).click();
      expect((await reported).headers()["x-tags"]).toContain("location=%2Fcustomers%2Fexample-payments");
      await suite.page.waitForURL(/\/login$/);
      await suite.page.goto(`${suite.server.baseUrl}/changelog`);
      expect(await hasHorizontalScroll(suite.page)).toBe(false);
      await screenshot(suite.page, `changelog-${viewport.width}`);
      expect(suite.pageErrors).toEqual([]);
    });
  }
});
