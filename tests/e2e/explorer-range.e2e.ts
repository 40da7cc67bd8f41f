import { beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { type RunningServer, screenshot, signedInSuite } from "./harness.ts";

// Issue 14: the histogram draws exactly the chosen range (the 1h preset ends at now, in 30 s buckets), and the
// brush, its handles and "Zoom to focus" stay inside it.

const email = "range@example.test";
const suite = signedInSuite({ email, timeoutMs: 15_000 });
let server: RunningServer;
let page: Page;
let pageErrors: string[];
let requestsPath = "";

type Wire = { global: { lowerMs: number; upperMs: number }; focus: { lowerMs: number; upperMs: number } | null };
const currentState = () => {
  const raw = new URL(page.url()).searchParams.get("filter");
  return JSON.parse(Buffer.from(String(raw), "base64").toString("utf8")) as Wire;
};
const waitForUrlChange = (before: string) => page.waitForFunction((b) => document.location.search !== b, before);

beforeAll(() => {
  ({ server, page, pageErrors } = suite);
  requestsPath = suite.home.replace(/\/live$/, "/requests");
});

describe("explorer histogram range", () => {
  test("the 1h preset: 30 s buckets, the axis ends at now, the brush cannot pass the end, zoom stays inside", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${server.baseUrl}${requestsPath}`);
    await page.getByTestId("histogram").waitFor();
    // The default is already the last hour: a second later, the preset gives a new range ending at the new now.
    await Bun.sleep(1_100);
    const before = new URL(page.url()).search;
    await page.getByRole("button", { name: "1h", exact: true }).click();
    await waitForUrlChange(before);
    const pressedAt = Date.now();
    const { global } = currentState();
    expect(global.upperMs - global.lowerMs).toBe(3_600_000);
    expect(global.upperMs).toBeGreaterThanOrEqual(pressedAt - 5_000);
    expect(global.upperMs).toBeLessThanOrEqual(pressedAt + 1_000);
    expect(await page.getByText("bucket 30s").count()).toBe(1);

    // The chart spans exactly [start, end] of the range: the last axis label is at most one tick step before now.
    const hist = page.getByTestId("histogram");
    const box = (await hist.boundingBox())!;
    const labels = page.getByTestId("axis").locator("span");
    const lastLabel = (await labels.last().boundingBox())!;
    const lastCentre = lastLabel.x + lastLabel.width / 2;
    expect(lastCentre).toBeLessThanOrEqual(box.x + box.width + 1);
    // 1 h gets a 5 min tick step: the last tick is within the last 5 minutes of the chart, not half-way.
    expect(lastCentre).toBeGreaterThan(box.x + box.width * (1 - 5 / 60) - 2);
    expect(await labels.count()).toBeGreaterThanOrEqual(11);
    await screenshot(page, "explorer-range-1h-1440");

    // A new interval dragged from 80% to far past the right edge ends at the range's end.
    const y = box.y + box.height * 0.4;
    await page.mouse.move(box.x + box.width * 0.8, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width + 300, y, { steps: 6 });
    await page.mouse.up();
    await page.getByTestId("focus-range").waitFor();
    let s = currentState();
    expect(s.focus).not.toBeNull();
    expect(s.focus!.upperMs).toBe(global.upperMs);
    expect(s.focus!.lowerMs).toBeGreaterThanOrEqual(global.lowerMs);
    expect(s.focus!.lowerMs % 30_000).toBe(0);

    // The left handle dragged past the start stops at the start; the right one dragged past the end stays at it.
    const xOf = (t: number) => box.x + ((t - global.lowerMs) / (global.upperMs - global.lowerMs)) * box.width;
    let search = new URL(page.url()).search;
    await page.mouse.move(xOf(s.focus!.lowerMs), y);
    await page.mouse.down();
    await page.mouse.move(box.x - 200, y, { steps: 6 });
    await page.mouse.up();
    await waitForUrlChange(search);
    s = currentState();
    expect(s.focus).toEqual({ lowerMs: global.lowerMs, upperMs: global.upperMs });
    search = new URL(page.url()).search;
    await page.mouse.move(box.x + box.width * 0.5, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.9, y, { steps: 4 });
    await page.mouse.up();
    await waitForUrlChange(search);
    s = currentState();
    search = new URL(page.url()).search;
    await page.mouse.move(xOf(s.focus!.upperMs), y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width + 400, y, { steps: 6 });
    await page.mouse.up();
    await waitForUrlChange(search);
    s = currentState();
    expect(s.focus!.upperMs).toBe(global.upperMs);
    const handleX = Number(await page.getByTestId("right-handle").getAttribute("x1"));
    expect(handleX).toBeLessThanOrEqual(1200);
    await screenshot(page, "explorer-range-brushed-1440");

    // Zoom to focus: the new range is the focus, inside the old one and not in the future.
    search = new URL(page.url()).search;
    await page.getByRole("button", { name: "Zoom to focus" }).click();
    await waitForUrlChange(search);
    const zoomed = currentState();
    expect(zoomed.global).toEqual(s.focus!);
    expect(zoomed.global.upperMs).toBeLessThanOrEqual(global.upperMs);
    expect(zoomed.global.lowerMs).toBeGreaterThanOrEqual(global.lowerMs);
    expect(zoomed.focus).toBeNull();
    // Shifting forward stops at a day from now.
    expect(await page.getByRole("button", { name: "Shift forward" }).isEnabled()).toBe(true);
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("a URL with a huge range falls back to the last hour; the phone width draws the same range", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const bad = Buffer.from(JSON.stringify({ clauses: [], global: { lowerMs: 0, upperMs: 1e300 }, focus: null })).toString("base64");
    const started = Date.now();
    await page.goto(`${server.baseUrl}${requestsPath}?filter=${encodeURIComponent(bad)}`);
    // A phone folds the chart with the filters: open them.
    await page.getByRole("button", { name: "Filters and chart" }).click();
    await page.getByTestId("histogram").waitFor();
    await page.getByTestId("histogram-total").filter({ hasText: "request" }).waitFor();
    const end = Number(await page.getByTestId("histogram").getAttribute("data-end"));
    const start = Number(await page.getByTestId("histogram").getAttribute("data-start"));
    expect(end - start).toBe(3_600_000);
    expect(end).toBeGreaterThanOrEqual(started - 5_000);
    expect(end).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await page.getByRole("alert").count()).toBe(0);
    const box = (await page.getByTestId("histogram").boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    await screenshot(page, "explorer-range-1h-390");
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
