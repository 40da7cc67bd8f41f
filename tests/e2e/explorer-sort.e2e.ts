import { beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { createPublisher } from "~/agent/publish.ts";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { generateEvents } from "../store/generate.ts";
import { namespaceTokenOf, type RunningServer, screenshot, signedInSuite, signInByEmail, watchPageErrors } from "./harness.ts";

// The explorer's sort runs on the store over the whole range: with more requests than one page holds, sorting by
// duration shows the slowest of the range even when it is older than the newest page. Opening a request keeps
// the list's Time, Duration and Size at 1440 px, and its Copy link reopens it from a fresh page (a phone's
// full-screen sheet) when it lies outside the default range; another user's namespace does not show it. Past the
// first 10,000 rows of a sort, Next shows the rest (the slowest request is the last of the quickest-first order),
// kept in the URL, at 1440 and 390 px.

const H = 3_600_000;
const endMs = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000;
const global = { lowerMs: endMs - 6 * H, upperMs: endMs };
/** More than the 10,000 rows of the newest page. */
const generated = 10_200;
const slowPath = "/the-slowest-one";

const suite = signedInSuite({
  email: "sorter@example.test",
  timeoutMs: 20_000,
  prepare: ({ browser, server }) => browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl }),
});
let server: RunningServer;
let page: Page;
let pageErrors: string[];
let requestsPath = "";

const stateParam = (s: object) => Buffer.from(JSON.stringify(s)).toString("base64");
const rows = (p: Page) => p.locator("[role=row][data-event-id]");
const settled = (p: Page) =>
  p.waitForFunction(() => {
    const results = document.querySelector("[data-testid=results]");
    return !!results && !results.textContent?.includes("Loading…");
  });
/** Waits until the list's first row does (or does not) hold `text`. */
const firstRow = (p: Page, text: string, has = true) =>
  p.waitForFunction(
    ([t, h]) => (document.querySelector("[role=row][data-event-id]")?.textContent?.includes(t as string) ?? false) === h,
    [text, has] as const,
    { timeout: 30_000 },
  );
const header = (name: string) => page.getByRole("columnheader", { name: new RegExp(`^${name}`) });
/** Waits until the list's last row (scrolled to the end of the page of rows) does (or does not) hold `text`. */
const lastRow = (p: Page, text: string, has = true) =>
  p.waitForFunction(
    ([t, h]) => {
      const scroll = document.querySelector("[data-testid=results-scroll]");
      if (scroll) scroll.scrollTop = scroll.scrollHeight;
      const all = document.querySelectorAll<HTMLElement>("[role=row][data-event-id]");
      const last = all[all.length - 1];
      const group = scroll?.querySelector<HTMLElement>("[role=rowgroup]");
      // Only once the virtual list has rendered the page's very last row.
      if (!last || !group || Number.parseFloat(last.style.top) + last.offsetHeight < group.offsetHeight - 1) return false;
      return (last.textContent?.includes(t as string) ?? false) === h;
    },
    [text, has] as const,
    { timeout: 30_000 },
  );
const rowLimit = (p: Page, text: string) =>
  p.waitForFunction((t) => document.querySelector("[data-testid=row-limit]")?.textContent === t, text, { timeout: 30_000 });

beforeAll(async () => {
  ({ server, page, pageErrors } = suite);
  requestsPath = suite.home.replace(/\/live$/, "/requests");
  // Generated requests over the six hours, none slower than 2 s; one of 9 s among the oldest, outside the newest page.
  const events: CapturedEvent[] = generateEvents({
    count: generated,
    startMicros: global.lowerMs * 1000 + 60_000_000,
    endMicros: (endMs - 2 * 60_000) * 1000,
    seed: 5,
    bodyBytes: 8,
  }).map((e) => ({
    ...e,
    http_duration: Math.min(e.http_duration, 2_000_000),
    http_req_body: Buffer.from(e.http_req_body, "base64"),
    http_resp_body: Buffer.from(e.http_resp_body, "base64"),
  }));
  const oldest = events.reduce((a, b) => (a.time <= b.time ? a : b));
  Object.assign(oldest, { http_duration: 9_000_000, http_req_path: slowPath, http_route: slowPath, http_req_method: "GET" });
  const publisher = createPublisher({
    endpoint: server.baseUrl,
    token: await namespaceTokenOf(page),
    maxQueue: 20_000,
    batchMaxEvents: 1000,
  });
  await publisher.join();
  for (const e of events) publisher.send(e);
  const stats = await publisher.close(120_000);
  expect(stats.dropped).toBe(0);
}, 180_000);

describe("explorer sort, side panel and permalink", () => {
  test("at 1440 px: sorting by duration shows the slowest of the whole range, kept on reload", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const url = `${server.baseUrl}${requestsPath}?filter=${encodeURIComponent(stateParam({ clauses: [], global, focus: null }))}`;
    // The store sink may still be writing the last batches: reload until all are counted.
    const deadline = Date.now() + 60_000;
    for (;;) {
      await page.goto(url);
      await page.getByTestId("result-count").waitFor();
      await settled(page);
      const count = Number(((await page.getByTestId("result-count").textContent()) ?? "").replace(/[^\d]/g, ""));
      if (count >= generated) break;
      if (Date.now() > deadline) throw new Error(`only ${count} rows stored`);
      await Bun.sleep(1000);
    }
    // Newest first, the first page does not reach back to the slow request.
    await page.getByTestId("row-limit").waitFor();
    expect(await page.locator(`[role=row]:has-text("${slowPath}")`).count()).toBe(0);

    await header("Duration").getByRole("button").click();
    await firstRow(page, slowPath);
    expect(new URL(page.url()).searchParams.get("sort")).toBe("duration.desc");
    expect(await header("Duration").getAttribute("aria-sort")).toBe("descending");
    expect(await rows(page).first().textContent()).toContain("9.00s");
    await screenshot(page, "explorer-sort-duration-1440");

    // Ascending: the quickest first, and the slow one nowhere near.
    await header("Duration").getByRole("button").click();
    await page.waitForURL(/[?&]sort=duration\.asc/);
    await settled(page);
    await firstRow(page, slowPath, false);

    // Back to descending, then a reload keeps the sort.
    await page.goBack();
    await page.waitForURL(/[?&]sort=duration\.desc/);
    await page.reload();
    await settled(page);
    await firstRow(page, slowPath);
    expect(pageErrors).toEqual([]);
  }, 120_000);

  test("at 1440 px the open request is a side panel: Time, Duration and Size stay in the list", async () => {
    await rows(page).first().click();
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.getByTestId("detail-url").filter({ hasText: slowPath }).waitFor();
    expect(new URL(page.url()).searchParams.get("event")).toBe(await rows(page).first().getAttribute("data-event-id"));
    for (const name of ["Time", "Method", "Status", "URL", "Duration", "Size"]) {
      expect({ name, visible: await header(name).isVisible() }).toEqual({ name, visible: true });
    }
    const first = rows(page).first();
    const cells = first.getByRole("cell");
    expect(await cells.first().isVisible()).toBe(true);
    expect(await cells.nth(4).textContent()).toBe("9.00s");
    expect(await cells.nth(5).isVisible()).toBe(true);
    // The list and the panel sit side by side, the list's last column clear of the panel.
    const list = (await page.getByRole("table", { name: "Results" }).boundingBox())!;
    const panel = (await detail.boundingBox())!;
    const size = (await header("Size").boundingBox())!;
    expect(size.x + size.width).toBeLessThanOrEqual(panel.x + 1);
    expect(list.x + list.width).toBeLessThanOrEqual(panel.x + 1);
    await screenshot(page, "explorer-side-panel-1440");
  }, 60_000);

  test("Copy link reopens the request from a fresh page at 390 px, outside the default range; another user does not see it", async () => {
    const eventId = new URL(page.url()).searchParams.get("event");
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.getByRole("button", { name: "Copy link" }).click();
    await detail.getByRole("button", { name: "Copied!" }).waitFor();
    const link = await page.evaluate(() => navigator.clipboard.readText());
    const parsed = new URL(link);
    expect(parsed.origin).toBe(server.baseUrl);
    expect(parsed.pathname).toBe(requestsPath);
    expect(parsed.searchParams.get("event")).toBe(eventId);

    // A fresh page of the same person (a reload of nothing), on a phone.
    const fresh = await page.context().newPage();
    const freshErrors = watchPageErrors(fresh);
    try {
      await fresh.setViewportSize({ width: 390, height: 844 });
      await fresh.goto(link);
      const sheet = fresh.getByRole("region", { name: "Request detail" });
      await sheet.getByTestId("detail-url").filter({ hasText: slowPath }).waitFor();
      // The full-screen sheet.
      const box = (await sheet.boundingBox())!;
      expect(box.width).toBeGreaterThanOrEqual(389);
      // The link's range is around the request, hours before the default last hour: the list holds it too (the
      // oldest request of all, so the last row of the newest-first list).
      const range = JSON.parse(Buffer.from(String(parsed.searchParams.get("filter")), "base64").toString("utf8")).global;
      expect(range.upperMs).toBeLessThan(Date.now() - 4 * H);
      await fresh.getByRole("button", { name: "Close detail" }).click();
      await settled(fresh);
      await fresh.getByTestId("results-scroll").evaluate((el) => {
        el.scrollTop = el.scrollHeight;
      });
      await fresh.locator(`[role=row][data-event-id="${eventId}"]`).waitFor();
      expect(new URL(fresh.url()).searchParams.get("event")).toBeNull();
      await screenshot(fresh, "explorer-permalink-390");
      expect(freshErrors).toEqual([]);
    } finally {
      await fresh.close();
    }

    // Another person, signed in to a namespace of their own, opens the same link: the request is not theirs to see.
    const other = await page.context().browser()!.newContext();
    try {
      const otherPage = await other.newPage();
      otherPage.setDefaultTimeout(20_000);
      await signInByEmail(otherPage, server.baseUrl, suite.smtp, "stranger@example.test");
      await otherPage.goto(link);
      // The dashboard's usual answer for a namespace that is not theirs; no detail, no query of it.
      await otherPage.getByText(/There is no namespace named/).waitFor();
      expect(await otherPage.getByTestId("detail-url").count()).toBe(0);
      expect(await otherPage.locator(`text=${slowPath}`).count()).toBe(0);
    } finally {
      await other.close();
    }
  }, 90_000);

  test("at 1440 px Next shows the rows past the first 10,000 of the sort, kept on reload; another sort starts at the top", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const url = `${server.baseUrl}${requestsPath}?filter=${encodeURIComponent(stateParam({ clauses: [], global, focus: null }))}&sort=duration.asc`;
    await page.goto(url);
    await settled(page);
    // Quickest first, the slow request is the 10,200th: not on the first page, to its very end.
    await rowLimit(page, "Rows 1–10,000 of 10,200.");
    await lastRow(page, slowPath, false);
    await page.getByRole("button", { name: "Next 200 ›" }).click();
    await page.waitForURL(/[?&]page=2/);
    await rowLimit(page, "Rows 10,001–10,200 of 10,200.");
    await settled(page);
    await lastRow(page, slowPath);
    expect(await rows(page).last().textContent()).toContain("9.00s");
    expect(await page.getByRole("button", { name: /^Next/ }).count()).toBe(0);
    await screenshot(page, "explorer-next-page-1440");

    await page.reload();
    await settled(page);
    await rowLimit(page, "Rows 10,001–10,200 of 10,200.");
    await lastRow(page, slowPath);

    // Slowest first is another list: its first page, headed by the slow request.
    await header("Duration").getByRole("button").click();
    await page.waitForURL(/[?&]sort=duration\.desc/);
    expect(new URL(page.url()).searchParams.get("page")).toBeNull();
    await rowLimit(page, "Rows 1–10,000 of 10,200.");
    await firstRow(page, slowPath);
    expect(pageErrors).toEqual([]);
  }, 90_000);

  test("at 390 px the pages are reachable beside the list, and Previous goes back", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const url = `${server.baseUrl}${requestsPath}?filter=${encodeURIComponent(stateParam({ clauses: [], global, focus: null }))}&sort=duration.asc&page=2`;
    await page.goto(url);
    await settled(page);
    await rowLimit(page, "Rows 10,001–10,200 of 10,200.");
    await lastRow(page, slowPath);
    const previous = page.getByRole("button", { name: "‹ Previous 10,000" });
    const box = (await previous.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    await screenshot(page, "explorer-next-page-390");
    await previous.click();
    await page.waitForURL((u) => !u.searchParams.has("page"));
    await rowLimit(page, "Rows 1–10,000 of 10,200.");
    await lastRow(page, slowPath, false);
    expect(await page.getByRole("button", { name: "Next 200 ›" }).isVisible()).toBe(true);
    await screenshot(page, "explorer-first-page-390");
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
