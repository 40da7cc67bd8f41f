import { describe, expect, test } from "bun:test";
import { browserSuite, hasHorizontalScroll, screenshot } from "./harness.ts";

// Pricing and the blog as visitors use them, at 390 and 1440 px.
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const suite = browserSuite();

const eventKinds = (): Promise<string[]> =>
  new Promise((resolve) => {
    const kinds: string[] = [];
    suite.page.on("request", (r) => {
      if (r.url().endsWith("/api/Event")) kinds.push(decodeURIComponent(/kind=([^;]*)/.exec(r.headers()["x-tags"] ?? "")?.[1] ?? ""));
    });
    resolve(kinds);
  });

describe("pricing", () => {
  for (const viewport of [PHONE, DESKTOP]) {
    test(`${viewport.width} px: four plans, FAQ entries expand, each Get started reports its plan`, async () => {
      await suite.page.setViewportSize(viewport);
      await suite.page.goto(`${suite.server.baseUrl}/pricing`);
      expect(await suite.page.title()).toBe("Pricing | Tapscope");
      for (const name of ["Free", "Team", "Scale", "Enterprise"])
        expect(await suite.page.getByRole("heading", { name, exact: true }).isVisible()).toBe(true);
      expect(await suite.page.getByText("$599").isVisible()).toBe(true);
      const question = suite.page.getByRole("button", { name: "Is there a free trial?" });
      expect(await question.getAttribute("aria-expanded")).toBe("false");
      await question.click();
      expect(await question.getAttribute("aria-expanded")).toBe("true");
      expect(await suite.page.getByText("14 days with no limits").isVisible()).toBe(true);
      expect(await suite.page.getByRole("link", { name: "Contact us" }).getAttribute("href")).toStartWith("mailto:");
      expect(await hasHorizontalScroll(suite.page)).toBe(false);
      await screenshot(suite.page, `pricing-${viewport.width}`);
      const kinds = await eventKinds();
      for (const [i, plan] of ["free", "team", "scale"].entries()) {
        await suite.page.goto(`${suite.server.baseUrl}/pricing`);
        await suite.page.getByRole("link", { name: "Get started" }).nth(i).click();
        await suite.page.waitForURL(/\/login$/);
        for (let t = 0; t < 50 && !kinds.includes(`clickLogin_pricingPage_${plan}`); t++) await Bun.sleep(20);
        expect(kinds).toContain(`clickLogin_pricingPage_${plan}`);
      }
      expect(suite.pageErrors).toEqual([]);
    });
  }
});

describe("blog", () => {
  test("the index lists both posts newest first and ends with // EOF; titles end in '| Tapscope'", async () => {
    await suite.page.setViewportSize(PHONE);
    await suite.page.goto(`${suite.server.baseUrl}/blog`);
    const links = await suite.page.getByRole("main").getByRole("link").allTextContents();
    expect(links).toEqual(["gRPC debugging sucks so we fixed it", "Every byte explained"]);
    expect(await suite.page.getByText("// EOF").isVisible()).toBe(true);
    await suite.page.getByRole("link", { name: "gRPC debugging sucks so we fixed it" }).click();
    await suite.page.waitForURL(/grpc-debugging$/);
    expect(await suite.page.title()).toBe("gRPC debugging sucks so we fixed it | Tapscope");
    expect(await suite.page.getByRole("link", { name: "OPEN" }).getAttribute("href")).toBe("/login");
    expect(await suite.page.getByRole("link", { name: "free tier" }).getAttribute("href")).toBe("/pricing");
    expect(await hasHorizontalScroll(suite.page)).toBe(false);
    await screenshot(suite.page, "blog-grpc-390");
  });

  for (const [viewport, columns] of [
    [PHONE, 8],
    [DESKTOP, 16],
  ] as const) {
    test(`${viewport.width} px: the hex viewer shows ${columns} bytes a row and highlights each section's bytes as it scrolls in`, async () => {
      await suite.page.setViewportSize(viewport);
      await suite.page.goto(`${suite.server.baseUrl}/blog/http2-preface`);
      expect(await suite.page.title()).toBe("Every byte explained | Tapscope");
      const cells = suite.page.locator("[data-offset]");
      expect(await cells.count()).toBe(51);
      const tops = await cells.evaluateAll((els) => els.map((el) => Math.round(el.getBoundingClientRect().top)));
      expect(tops.filter((t) => t === tops[0]).length).toBe(columns);
      const activeRange = async () => {
        const on = await suite.page
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
        await suite.page.locator(`[data-range="${range}"]`).scrollIntoViewIfNeeded();
        await suite.page.evaluate((r) => {
          const el = document.querySelector(`[data-range="${r}"]`)!;
          window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - window.innerHeight / 2 + 20);
        }, range);
        for (let t = 0; t < 50 && JSON.stringify(await activeRange()) !== JSON.stringify(expected); t++) await Bun.sleep(20);
        expect(await activeRange()).toEqual([...expected]);
      }
      expect(await hasHorizontalScroll(suite.page)).toBe(false);
      await screenshot(suite.page, `blog-preface-${viewport.width}`);
      expect(suite.pageErrors).toEqual([]);
    });
  }

  test("posts and pricing read without JavaScript (server-rendered text)", async () => {
    for (const [path, text] of [
      ["/pricing", "Predictable pricing"],
      ["/blog/http2-preface", "The connection preface"],
      ["/blog/grpc-debugging", "What you get"],
    ] as const) {
      const html = await (await fetch(`${suite.server.baseUrl}${path}`)).text();
      expect(html).toContain(text);
    }
  });
});
