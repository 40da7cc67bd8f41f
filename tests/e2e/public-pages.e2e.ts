import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { launchBrowser, type RunningBrowser, type RunningServer, screenshot, startServer, watchPageErrors } from "./harness.ts";

// Pricing and the blog as visitors use them, at 390 and 1440 px.
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
const eventKinds = (): Promise<string[]> =>
  new Promise((resolve) => {
    const kinds: string[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/api/Event")) kinds.push(decodeURIComponent(/kind=([^;]*)/.exec(r.headers()["x-tags"] ?? "")?.[1] ?? ""));
    });
    resolve(kinds);
  });

describe("pricing", () => {
  for (const viewport of [PHONE, DESKTOP]) {
    test(`${viewport.width} px: four plans, FAQ entries expand, each Get started reports its plan`, async () => {
      await page.setViewportSize(viewport);
      await page.goto(`${server.baseUrl}/pricing`);
      expect(await page.title()).toBe("Pricing | Tapscope");
      for (const name of ["Free", "Team", "Scale", "Enterprise"])
        expect(await page.getByRole("heading", { name, exact: true }).isVisible()).toBe(true);
      expect(await page.getByText("$599").isVisible()).toBe(true);
      const question = page.getByRole("button", { name: "Is there a free trial?" });
      expect(await question.getAttribute("aria-expanded")).toBe("false");
      await question.click();
      expect(await question.getAttribute("aria-expanded")).toBe("true");
      expect(await page.getByText("14 days with no limits").isVisible()).toBe(true);
      expect(await page.getByRole("link", { name: "Contact us" }).getAttribute("href")).toStartWith("mailto:");
      expect(await hasHorizontalScroll()).toBe(false);
      await screenshot(page, `pricing-${viewport.width}`);
      const kinds = await eventKinds();
      for (const [i, plan] of ["free", "team", "scale"].entries()) {
        await page.goto(`${server.baseUrl}/pricing`);
        await page.getByRole("link", { name: "Get started" }).nth(i).click();
        await page.waitForURL(/\/login$/);
        for (let t = 0; t < 50 && !kinds.includes(`clickLogin_pricingPage_${plan}`); t++) await Bun.sleep(20);
        expect(kinds).toContain(`clickLogin_pricingPage_${plan}`);
      }
      expect(pageErrors).toEqual([]);
    });
  }
});

describe("blog", () => {
  test("the index lists both posts newest first and ends with // EOF; titles end in '| Tapscope'", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.baseUrl}/blog`);
    const links = await page.getByRole("main").getByRole("link").allTextContents();
    expect(links).toEqual(["gRPC debugging sucks so we fixed it", "Every byte explained"]);
    expect(await page.getByText("// EOF").isVisible()).toBe(true);
    await page.getByRole("link", { name: "gRPC debugging sucks so we fixed it" }).click();
    await page.waitForURL(/grpc-debugging$/);
    expect(await page.title()).toBe("gRPC debugging sucks so we fixed it | Tapscope");
    expect(await page.getByRole("link", { name: "OPEN" }).getAttribute("href")).toBe("/login");
    expect(await page.getByRole("link", { name: "free tier" }).getAttribute("href")).toBe("/pricing");
    expect(await hasHorizontalScroll()).toBe(false);
    await screenshot(page, "blog-grpc-390");
  });

  for (const [viewport, columns] of [
    [PHONE, 8],
    [DESKTOP, 16],
  ] as const) {
    test(`${viewport.width} px: the hex viewer shows ${columns} bytes a row and highlights each section's bytes as it scrolls in`, async () => {
      await page.setViewportSize(viewport);
      await page.goto(`${server.baseUrl}/blog/http2-preface`);
      expect(await page.title()).toBe("Every byte explained | Tapscope");
      const cells = page.locator("[data-offset]");
      expect(await cells.count()).toBe(51);
      const tops = await cells.evaluateAll((els) => els.map((el) => Math.round(el.getBoundingClientRect().top)));
      expect(tops.filter((t) => t === tops[0]).length).toBe(columns);
      const activeRange = async () => {
        const on = await page
          .locator("[data-offset][data-active]")
          .evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.offset)));
        return [Math.min(...on), Math.max(...on) + 1];
      };
      expect(await activeRange()).toEqual([0, 24]);
      for (const [range, expected] of [
        ["header", [24, 33]],
        ["push", [39, 45]],
        ["window", [45, 51]],
      ] as const) {
        await page.locator(`[data-range="${range}"]`).scrollIntoViewIfNeeded();
        await page.evaluate((r) => {
          const el = document.querySelector(`[data-range="${r}"]`)!;
          window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - window.innerHeight / 2 + 20);
        }, range);
        for (let t = 0; t < 50 && JSON.stringify(await activeRange()) !== JSON.stringify(expected); t++) await Bun.sleep(20);
        expect(await activeRange()).toEqual([...expected]);
      }
      expect(await hasHorizontalScroll()).toBe(false);
      await screenshot(page, `blog-preface-${viewport.width}`);
      expect(pageErrors).toEqual([]);
    });
  }

  test("posts and pricing read without JavaScript (server-rendered text)", async () => {
    for (const [path, text] of [
      ["/pricing", "Predictable pricing"],
      ["/blog/http2-preface", "The connection preface"],
      ["/blog/grpc-debugging", "What you get"],
    ] as const) {
      const html = await (await fetch(`${server.baseUrl}${path}`)).text();
      expect(html).toContain(text);
    }
  });
});
