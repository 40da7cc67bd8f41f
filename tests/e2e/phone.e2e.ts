import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Frame, Page } from "playwright-core";
import { createPublisher, type Publisher } from "~/agent/publish.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { namespaceTokenOf, type RunningServer, screenshot, signedInSuite } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// The data screens on a 390 px phone (and at 1440 px for comparison): the Live screen, a shared link, the
// request detail and the explorer. Rows keep method, status and URL; the detail is a full-screen sheet;
// toolbars take at most two lines; nothing runs off screen.

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
let server: RunningServer;
let page: Page;
let pageErrors: string[];
let anonymous: Publisher;
let namespaced: Publisher;
let linkUrl = "";
let dashboardPath = "";
const email = "phone@example.test";

const sampleEvents = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    tracedEvent({
      time: (Date.now() - (n - i) * 1000) * 1000,
      http_req_method: i % 3 === 0 ? "POST" : "GET",
      http_req_path: `/api/v1/customers/${1000 + i}/invoices?expand=lines&limit=${i}`,
      http_resp_status_code: i % 5 === 0 ? 500 : 200,
      http_resp_content_type: "application/json",
      http_resp_headers: [
        ["Content-Type", "application/json"],
        ["Strict-Transport-Security", "max-age=63072000; includeSubDomains"],
      ],
      http_req_headers: [["Accept", "application/json"]],
      http_resp_body: Buffer.from(JSON.stringify({ id: 1000 + i, lines: [{ amount: 42 }] })).toString("base64"),
      http_resp_body_size_bytes_wire: 40,
      http_req_content_encoding: "gzip",
      http_resp_content_encoding: "gzip",
    }),
  );

const suite = signedInSuite({ timeoutMs: 15_000 });

beforeAll(async () => {
  ({ server, page, pageErrors } = suite);
  anonymous = createPublisher({ endpoint: server.baseUrl, batchIntervalMs: 20 });
  linkUrl = (await anonymous.join()).linkUrl!;
}, 60_000);

afterAll(async () => {
  await anonymous?.close();
  await namespaced?.close();
});

/** How many text lines tall an element is, in its own line height (toolbars: at most two). */
async function lineCount(target: Page | Frame, selector: string): Promise<number> {
  return target.evaluate((sel) => {
    const el = document.querySelector(sel) as HTMLElement | null;
    if (!el) throw new Error(`no ${sel}`);
    const rowTops = new Set(
      Array.from(el.querySelectorAll("button, input, span, a")).map((c) => Math.round((c as HTMLElement).getBoundingClientRect().top / 8)),
    );
    const rect = el.getBoundingClientRect();
    // Rows of controls: distinct tops, rounded to 8 px, of the controls that start a row.
    const rows = Array.from(rowTops)
      .sort((a, b) => a - b)
      .filter((t, i, all) => i === 0 || t - (all[i - 1] ?? 0) >= 3);
    return rect.height > 0 ? rows.length : 0;
  }, selector);
}

/** Elements wider than the viewport or reaching past its right edge (what "runs off screen"). */
async function offScreen(target: Page | Frame): Promise<string[]> {
  return target.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll("button, input, select, a, [role=columnheader]"))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (getComputedStyle(el).visibility === "hidden") continue;
      if (r.right > width + 1 || r.left < -1)
        out.push(`${el.tagName} "${(el.textContent ?? "").trim().slice(0, 30)}" ${Math.round(r.left)}..${Math.round(r.right)} > ${width}`);
    }
    return out;
  });
}

async function visibleColumnsOf(target: Page | Frame, table: string): Promise<string[]> {
  return target.evaluate(
    (label) =>
      Array.from(document.querySelectorAll(`[role=table][aria-label="${label}"] [role=columnheader]`))
        .filter((h) => (h as HTMLElement).getBoundingClientRect().width > 24)
        .sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left)
        .map((h) => (h.textContent ?? "").replace(/[↑↓]/g, "").trim()),
    table,
  );
}

async function visibleColumns(frame: Frame): Promise<string[]> {
  return frame.evaluate(() =>
    Array.from(document.querySelectorAll("[role=columnheader]"))
      .filter((h) => (h as HTMLElement).getBoundingClientRect().width > 24)
      .sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left)
      .map((h) => (h.textContent ?? "").trim()),
  );
}

/** The texts of the first row's cells that show whole on screen (not hidden, cut or past the edge), left to right. */
function shownCellTexts(target: Page | Frame): Promise<string[]> {
  return target.evaluate(() => {
    const row = document.querySelector("[role=row][data-event-id]");
    if (!row) throw new Error("no row");
    const width = document.documentElement.clientWidth;
    return Array.from(row.querySelectorAll("[role=cell]"))
      .filter((c) => {
        const r = c.getBoundingClientRect();
        return r.width > 0 && r.right <= width + 1 && c.scrollWidth <= c.clientWidth + 1;
      })
      .sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left)
      .map((c) => (c.textContent ?? "").trim());
  });
}

/** Selects narrower than their chosen option (the text is cut): measured against a copy free to take its own width. */
function cutSelects(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("select"))
      .filter((el) => el.getBoundingClientRect().width > 0)
      .filter((el) => {
        const copy = el.cloneNode(true) as HTMLSelectElement;
        copy.value = el.value;
        copy.style.cssText = "position:absolute;width:auto;min-width:0;max-width:none;flex:none";
        document.body.append(copy);
        const natural = copy.getBoundingClientRect().width;
        copy.remove();
        return el.getBoundingClientRect().width + 1 < natural;
      })
      .map((el) => el.getAttribute("aria-label") ?? el.value),
  );
}

describe("data screens on a 390 px phone", () => {
  test("a shared link: rows show method, status and URL; the toolbars take at most two lines", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(linkUrl);
    const frame = liveFrame(page);
    await frame.locator.locator("[data-testid=connection][data-state=open]").waitFor();
    for (const event of sampleEvents(30)) anonymous.send(event);
    await frame.locator.locator("[role=row][data-event-id]").filter({ hasText: "/api/v1/customers/1029/" }).waitFor();
    const columns = await visibleColumns(frame.frame());
    expect(columns).toEqual(["Status", "Method", "URL", "Duration"]);
    const firstRow = frame.locator.locator("[role=row][data-event-id]").first();
    const url = firstRow.locator("[role=cell]").filter({ hasText: "/api/v1/customers/" });
    expect((await url.boundingBox())!.width).toBeGreaterThan(150);
    expect(await shownCellTexts(frame.frame())).toContain("1.5ms");
    expect(await lineCount(frame.frame(), "[data-testid=frame-toolbar]")).toBeLessThanOrEqual(2);
    expect(await lineCount(page, "header")).toBeLessThanOrEqual(2);
    expect(await offScreen(page)).toEqual([]);
    expect(await offScreen(frame.frame())).toEqual([]);
    await screenshot(page, "phone-390-link");
  });

  test("outbound calls in the detail are shortened in the middle: /items and /slow stay apart", async () => {
    const frame = liveFrame(page);
    const parent = tracedEvent({ http_req_method: "GET", http_req_path: "/api/orders/77", http_duration: 300_000 });
    const call = (path: string, offsetUs: number) =>
      tracedEvent({
        time: parent.time + offsetUs,
        parent_event_id: parent.event_id,
        http_is_outgoing: true,
        http_req_method: "GET",
        http_req_host: "inventory-service.internal.example.com:8443",
        http_req_path: path,
        http_duration: 100_000,
      });
    for (const event of [parent, call("/v1/warehouses/eu-west/items", 10_000), call("/v1/warehouses/eu-west/slow", 120_000)])
      anonymous.send(event);
    await frame.locator.locator("[role=row][data-event-id]").filter({ hasText: "/api/orders/77" }).click();
    const calls = frame.locator.getByRole("list", { name: "Outbound calls" });
    await calls.locator("[data-testid=call-url]").nth(1).waitFor();
    // What shows of each URL (its parts that are not cut) ends with its own last segment.
    const shown = await frame.frame().evaluate(() =>
      Array.from(document.querySelectorAll("[data-testid=call-url]")).map((line) =>
        Array.from(line.children)
          .filter(
            (part) =>
              part.scrollWidth <= part.clientWidth + 1 && part.getBoundingClientRect().right <= line.getBoundingClientRect().right + 1,
          )
          .map((part) => part.textContent)
          .join("…"),
      ),
    );
    expect(shown).toHaveLength(2);
    expect(shown[0]).toEndWith("/items");
    expect(shown[1]).toEndWith("/slow");
    expect(await offScreen(frame.frame())).toEqual([]);
    await screenshot(page, "phone-390-detail-calls");
    await frame.locator.getByRole("region", { name: "Request detail" }).getByRole("button", { name: "Close detail" }).click();
  });

  test("the request detail is a full-screen sheet with whole-word labels, and closes back to the list", async () => {
    const frame = liveFrame(page);
    await frame.locator.locator("[role=row][data-event-id]").filter({ hasText: "/api/v1/customers/1029/" }).click();
    const detail = frame.locator.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    await page.waitForTimeout(300);
    const box = (await page.locator("iframe").boundingBox())!;
    const inner = (await detail.boundingBox())!;
    // The frame's box is in page coordinates; the detail's is in the frame's.
    expect(box.x).toBeLessThanOrEqual(1);
    expect(box.y).toBeLessThanOrEqual(1);
    expect(inner.width).toBeGreaterThanOrEqual(PHONE.width - 2);
    expect(inner.height).toBeGreaterThanOrEqual(PHONE.height - 2);
    // No label is broken inside a word: each Details name is on one line.
    const broken = await frame.frame().evaluate(() =>
      Array.from(document.querySelectorAll('table[aria-label="Details"] td:first-child'))
        .filter((td) => !(td.textContent ?? "").includes(" ") && (td as HTMLElement).getClientRects().length > 0)
        .filter((td) => {
          const range = document.createRange();
          range.selectNodeContents(td);
          return range.getClientRects().length > 1;
        })
        .map((td) => td.textContent),
    );
    expect(broken).toEqual([]);
    expect(await offScreen(frame.frame())).toEqual([]);
    await screenshot(page, "phone-390-request-detail");
    await detail.getByRole("button", { name: "Close detail" }).click();
    await detail.waitFor({ state: "detached" });
    await page.waitForTimeout(200);
    expect((await page.locator("iframe").boundingBox())!.y).toBeGreaterThan(40);
  });

  test("at 1440 px the link and its detail sit side by side", async () => {
    await page.setViewportSize(DESKTOP);
    await page.waitForTimeout(200);
    const frame = liveFrame(page);
    expect((await visibleColumns(frame.frame())).map((c) => c.replace(/^Time .+$/, "Time"))).toEqual([
      "Time",
      "Status",
      "Method",
      "URL",
      "Size",
      "Duration",
    ]);
    await screenshot(page, "desktop-1440-link");
    await frame.locator.locator("[role=row][data-event-id]").filter({ hasText: "/api/v1/customers/1029/" }).click();
    const detail = frame.locator.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    const inner = (await detail.boundingBox())!;
    expect(inner.width).toBeLessThan(DESKTOP.width * 0.6);
    await screenshot(page, "desktop-1440-request-detail");
  });

  test("signed in: the Live screen on a phone", async () => {
    await page.setViewportSize(PHONE);
    dashboardPath = (await suite.signIn(email)).replace(/\/live$/, "");
    const token = await namespaceTokenOf(page);
    namespaced = createPublisher({ endpoint: server.baseUrl, token, batchIntervalMs: 20 });
    await namespaced.join();
    for (const event of sampleEvents(30)) namespaced.send(event);
    const skip = page.getByRole("button", { name: "I'll do this later" });
    await page
      .getByRole("dialog")
      .or(page.getByRole("heading", { name: "Live", exact: true }))
      .first()
      .waitFor();
    if (await skip.count()) await skip.click();
    const frame = liveFrame(page);
    await frame.locator.locator("[role=row][data-event-id]").first().waitFor();
    expect(await visibleColumns(frame.frame())).toEqual(["Status", "Method", "URL", "Duration"]);
    expect(await shownCellTexts(frame.frame())).toContain("1.5ms");
    expect(await offScreen(page)).toEqual([]);
    await screenshot(page, "phone-390-live");
    await page.setViewportSize(DESKTOP);
    await page.waitForTimeout(200);
    await screenshot(page, "desktop-1440-live");
  }, 30_000);

  test("the explorer's controls stay on screen", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.baseUrl}${dashboardPath}/requests`);
    // The store takes the published events a moment after the live view shows them.
    for (const deadline = Date.now() + 15_000; ; ) {
      await page.getByTestId("result-count").waitFor();
      await page.waitForFunction(() => !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading…"));
      if ((await page.locator("[role=row][data-event-id]").count()) > 0) break;
      if (Date.now() > deadline) throw new Error("the explorer shows no rows");
      await page.waitForTimeout(500);
      await page.reload();
    }
    expect(await offScreen(page)).toEqual([]);
    await screenshot(page, "phone-390-explorer");
    expect(await visibleColumnsOf(page, "Results")).toEqual(["Method", "Status", "URL"]);
    // The controls are folded: the list takes the screen, and ◀ and ▶ stay beside the range.
    const toggle = page.getByRole("button", { name: "Filters and chart" });
    expect(await toggle.getAttribute("aria-expanded")).toBe("false");
    expect(await page.getByRole("textbox", { name: "Filter" }).isVisible()).toBe(false);
    const list = (await page.getByTestId("results-scroll").boundingBox())!;
    expect(list.height).toBeGreaterThan(PHONE.height * 0.6);
    expect(list.y + list.height).toBeLessThanOrEqual(PHONE.height);
    const range = (await page.getByTestId("global-range").boundingBox())!;
    for (const name of ["Shift back", "Shift forward"]) {
      const b = (await page.getByRole("button", { name }).boundingBox())!;
      expect(b.y + b.height / 2).toBeGreaterThan(range.y);
      expect(b.y + b.height / 2).toBeLessThan(range.y + range.height);
    }
    // Open: every control is there, no select is cut, and the list keeps most of a screen (the page scrolls).
    await toggle.click();
    await page.getByRole("textbox", { name: "Filter" }).waitFor();
    expect(await page.getByRole("button", { name: "Hide filters and chart" }).getAttribute("aria-expanded")).toBe("true");
    for (const name of ["1h", "Now", "Go", "Zoom to focus", "Search"])
      expect(await page.getByRole("button", { name, exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole("searchbox", { name: "Search headers and bodies" }).isVisible()).toBe(true);
    expect(await cutSelects(page)).toEqual([]);
    expect(await offScreen(page)).toEqual([]);
    await screenshot(page, "phone-390-explorer-open");
    await page.getByTestId("results-scroll").scrollIntoViewIfNeeded();
    expect((await page.getByTestId("results-scroll").boundingBox())!.height).toBeGreaterThan(PHONE.height * 0.5);
    await screenshot(page, "phone-390-explorer-open-scrolled");
    await page.getByRole("button", { name: "Hide filters and chart" }).click();
    const row = page.locator("[role=row][data-event-id]").first();
    {
      await row.click();
      await page.getByRole("region", { name: "Request detail" }).waitFor();
      const box = (await page.getByRole("region", { name: "Request detail" }).boundingBox())!;
      expect(box.width).toBeGreaterThanOrEqual(PHONE.width - 2);
      await screenshot(page, "phone-390-explorer-detail");
      await page.getByRole("button", { name: "Close detail" }).click();
    }
    await page.setViewportSize(DESKTOP);
    await page.waitForTimeout(300);
    expect(await offScreen(page)).toEqual([]);
    await screenshot(page, "desktop-1440-explorer");
    expect(pageErrors).toEqual([]);
  }, 30_000);

  test("tokens on a touch phone: delete is reachable, the creator and the token's last part show", async () => {
    await page.setViewportSize(PHONE);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: true, maxTouchPoints: 5 });
    try {
      await page.goto(`${server.baseUrl}${dashboardPath}/tokens`);
      expect(await page.evaluate(() => matchMedia("(pointer: fine)").matches)).toBe(false);
      const section = page.getByRole("region", { name: "Namespace tokens" });
      const row = section.getByRole("listitem").first();
      await row.waitFor();
      const masked = (await row.locator("code").textContent())!;
      expect(masked).toMatch(/\.\.\.\S{6}$/);
      const code = row.locator("code");
      expect(await code.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
      expect(await row.getByText(email).isVisible()).toBe(true);
      const remove = row.getByRole("button", { name: `Delete token ${masked}` });
      expect(await remove.evaluate((el) => getComputedStyle(el).opacity)).toBe("1");
      const box = (await remove.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
      expect(await offScreen(page)).toEqual([]);
      await screenshot(page, "phone-390-tokens");
      await remove.click();
      await page.getByRole("dialog").getByText(`delete token ${masked}`).waitFor();
      await page.getByRole("button", { name: "Cancel" }).click();
      // A new token: shown whole once, then its row (marked NEW) ends with the same last part, not cut.
      await section.getByRole("button", { name: "Create" }).click();
      const created = page.getByTestId("new-token");
      await created.waitFor();
      const token = (await created.textContent())!;
      const tokenBox = (await created.boundingBox())!;
      expect(tokenBox.x + tokenBox.width).toBeLessThanOrEqual(PHONE.width);
      expect(await created.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
      await screenshot(page, "phone-390-new-token");
      await page.getByRole("button", { name: "Done" }).click();
      const newRow = section
        .getByRole("listitem")
        .filter({ hasText: "NEW" })
        .filter({ hasText: token.slice(-6) });
      await newRow.waitFor();
      expect(await newRow.locator("code").evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
      const suffixBox = (await newRow.locator("code").boundingBox())!;
      expect(suffixBox.x + suffixBox.width).toBeLessThanOrEqual(PHONE.width);
    } finally {
      await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: false });
      await cdp.detach();
    }
    await page.setViewportSize(DESKTOP);
    await page.reload();
    await page.getByRole("region", { name: "Namespace tokens" }).getByRole("listitem").first().waitFor();
    await screenshot(page, "desktop-1440-tokens");
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
