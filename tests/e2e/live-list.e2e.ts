import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { createPublisher, type Publisher } from "~/agent/publish.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { hasHorizontalScroll, screenshot, signedInSuite } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// The live list under a stream in Chromium: a real server, a real publisher sending 50 requests a second to a shared
// link, and a person who points at a row, takes a moment, and clicks. Then the list's tools (Clear, Pause, columns,
// sorting) and a signed-in user's choice of columns surviving a reload.

const suite = signedInSuite({ email: "ada@example.test", timeoutMs: 15_000 });
let page: Page;
let publisher: Publisher;
let linkUrl = "";
let sent = 0;
let streaming: ReturnType<typeof setInterval> | null = null;
const rows = () => liveFrame(page).locator.locator("[role=row][data-event-id]");
const detail = () => liveFrame(page).locator.getByRole("region", { name: "Request detail" });

/** One request: users and admin pages alternate, so a row that moved by one opens the other kind. */
function send() {
  sent++;
  const path = sent % 2 === 0 ? `/api/users/${sent}` : `/admin/settings/${sent}`;
  publisher.send(
    tracedEvent({
      http_req_path: path,
      http_req_host: "shop.test",
      http_duration: 2000 + (sent % 7) * 1000,
      http_req_body_size_bytes_wire: sent % 3 === 0 ? 2048 : 0,
      http_resp_content_type: "application/json; charset=utf-8",
      http_version: sent % 2 === 0 ? "2" : "1.1",
    }),
  );
}

const startStream = () => {
  streaming ??= setInterval(send, 20);
};
const stopStream = () => {
  if (streaming) clearInterval(streaming);
  streaming = null;
};

beforeAll(async () => {
  page = suite.page;
  publisher = createPublisher({ endpoint: suite.server.baseUrl, batchIntervalMs: 20 });
  linkUrl = (await publisher.join()).linkUrl ?? "";
}, 60_000);

afterAll(async () => {
  stopStream();
  await publisher?.close();
});

/** The request number in a row's URL. */
const numberIn = (text: string) => Number(/\/(\d+)/.exec(text)?.[1] ?? 0);

/** The row under the page point (x, y) inside the live frame: its id and text. */
async function rowAt(x: number, y: number): Promise<{ id: string; text: string } | null> {
  const frameBox = (await page.locator("iframe").boundingBox())!;
  return liveFrame(page)
    .frame()
    .evaluate(
      ([fx, fy]) => {
        const row = document.elementFromPoint(fx!, fy!)?.closest("[data-event-id]");
        return row ? { id: row.getAttribute("data-event-id") ?? "", text: row.textContent ?? "" } : null;
      },
      [x - frameBox.x - 1, y - frameBox.y - 1],
    );
}

/** Points at the sixth row, waits as a person does before clicking, clicks; says what was pointed at and what opened. */
async function pointWaitClick(name: string) {
  const box = (await rows().nth(5).boundingBox())!;
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2;
  await page.mouse.move(x, y);
  const pointed = await rowAt(x, y);
  expect(pointed).not.toBeNull();
  const sentBefore = sent;
  await Bun.sleep(500);
  // Requests kept arriving meanwhile, and the list says so.
  expect(sent - sentBefore).toBeGreaterThan(5);
  expect((await rowAt(x, y))?.id).toBe(pointed!.id);
  await liveFrame(page).locator.getByTestId("new-rows").waitFor();
  // The pill sits over the column headings: the top row (its URL) stays uncovered.
  const pill = (await liveFrame(page).locator.getByTestId("new-rows").boundingBox())!;
  expect(pill.y + pill.height).toBeLessThanOrEqual((await rows().first().boundingBox())!.y + 1);
  await screenshot(page, name);
  await page.mouse.down();
  await page.mouse.up();
  await detail().waitFor();
  const path = /\/(?:api\/users|admin\/settings)\/\d+/.exec(pointed!.text)?.[0] ?? "none";
  expect(await detail().textContent()).toContain(path);
  return { ...pointed!, path };
}

describe("the live list under a stream of 50 requests a second", () => {
  test("at 1440 px a click lands on the row that was under the pointer; leaving the list follows again", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(linkUrl);
    await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();
    startStream();
    await rows().nth(20).waitFor();
    const pointed = await pointWaitClick("live-30-list-held-1440");
    expect(await liveFrame(page).locator.locator(`[data-event-id="${pointed.id}"][aria-selected=true]`).count()).toBe(1);
    await screenshot(page, "live-31-list-clicked-1440");

    // The pointer leaves: the list shows the newest requests on top again, and keeps the selection.
    const heldTop = numberIn((await rows().first().textContent()) ?? "");
    const sentAtLeave = sent;
    await page.mouse.move(5, 5);
    await liveFrame(page).locator.getByTestId("new-rows").waitFor({ state: "detached" });
    for (let i = 0; numberIn((await rows().first().textContent()) ?? "") <= sentAtLeave; i++) {
      expect(i).toBeLessThan(100);
      await Bun.sleep(50);
    }
    expect(numberIn((await rows().first().textContent()) ?? "")).toBeGreaterThan(heldTop);
    // The selection stays on the request it was, wherever that row went.
    expect(await detail().textContent()).toContain(pointed.path);
    await liveFrame(page).locator.getByRole("button", { name: "Close detail" }).click();
    await detail().waitFor({ state: "detached" });
  }, 60_000);

  test("at 390 px too, with the list's core columns: status, method, URL, duration", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await rows().nth(20).waitFor();
    const headers = await liveFrame(page)
      .locator.locator("[role=columnheader]:visible")
      .evaluateAll((cells) => cells.map((c) => c.getAttribute("data-column")));
    expect(headers).toEqual(["status", "method", "url", "duration"]);
    await pointWaitClick("live-32-list-held-390");
    await screenshot(page, "live-33-list-clicked-390");
    expect(await hasHorizontalScroll(page)).toBe(false);
    await liveFrame(page).locator.getByRole("button", { name: "Close detail" }).click();
    await detail().waitFor({ state: "detached" });
    await page.mouse.move(5, 5);
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 60_000);
});

describe("the list's tools", () => {
  const frame = () => liveFrame(page).locator;

  test("Pause turns the badge from Live to Paused; Clear empties the list and new requests fill it again", async () => {
    const badge = frame().getByTestId("connection");
    expect(await badge.textContent()).toBe("Live");
    expect(await badge.locator(".bg-emerald-400").count()).toBe(1);
    await frame().getByRole("button", { name: "Pause", exact: true }).click();
    await frame()
      .getByRole("button", { name: /^Paused · \d+ new — Follow$/ })
      .waitFor();
    expect(await badge.textContent()).toBe("Paused");
    expect(await badge.locator(".bg-emerald-400").count()).toBe(0);
    await screenshot(page, "live-34-list-paused-1440");
    await frame()
      .getByRole("button", { name: /Follow/ })
      .click();
    expect(await badge.textContent()).toBe("Live");

    stopStream();
    await frame().getByRole("button", { name: "Clear" }).click();
    await frame()
      .getByTestId("event-count")
      .filter({ hasText: /^0 requests$/ })
      .waitFor();
    expect(await rows().count()).toBe(0);
    for (let i = 0; i < 6; i++) send();
    await frame()
      .getByTestId("event-count")
      .filter({ hasText: /^6 requests$/ })
      .waitFor();
    expect(await rows().count()).toBe(6);
  }, 60_000);

  test("columns: chosen, sized and sorted by clicking a header; every row shows host and path", async () => {
    await frame().getByText("Columns", { exact: true }).click();
    for (const name of ["Protocol", "Service", "Remote address", "Type", "Req size", "Waterfall"])
      await frame().getByRole("checkbox", { name }).check();
    await frame().getByText("Columns", { exact: true }).click();
    const header = (id: string) => frame().locator(`[role=columnheader][data-column=${id}]`);
    for (const id of ["protocol", "service", "remote", "contentType", "requestSize", "waterfall"]) await header(id).waitFor();
    const first = rows().first();
    const cells = await first.locator("[role=cell]").allTextContents();
    expect(cells.join("|")).toContain("|api|");
    expect(cells.join("|")).toMatch(/\|h[12]\|/);
    expect(cells.join("|")).toContain("application/json");
    expect(cells.join("|")).toMatch(/shop\.test\/(api\/users|admin\/settings)\/\d+/);
    expect(await first.locator("[data-waterfall-left]").count()).toBe(1);

    // Drag the Service column's edge 80 px wider.
    const before = (await header("service").boundingBox())!;
    const handle = (await frame().getByRole("separator", { name: "Resize Service" }).boundingBox())!;
    await page.mouse.move(handle.x + handle.width / 2, handle.y + handle.height / 2);
    await page.mouse.down();
    await page.mouse.move(handle.x + 80, handle.y + handle.height / 2, { steps: 5 });
    await page.mouse.up();
    expect(Math.round((await header("service").boundingBox())!.width - before.width)).toBeGreaterThanOrEqual(70);

    // The whole header cell sorts: slowest first, then fastest first.
    await header("duration").click({ position: { x: 4, y: 4 } });
    expect(await header("duration").getAttribute("aria-sort")).toBe("descending");
    const durations = async () =>
      (await rows().evaluateAll((rs) => rs.map((r) => r.querySelector("[role=cell]:nth-last-child(2)")?.textContent ?? ""))).map((t) =>
        Number.parseFloat(t),
      );
    const slowest = await durations();
    expect(slowest).toEqual([...slowest].sort((a, b) => b - a));
    await header("duration").click({ position: { x: 4, y: 4 } });
    expect(await header("duration").getAttribute("aria-sort")).toBe("ascending");
    const fastest = await durations();
    expect(fastest).toEqual([...fastest].sort((a, b) => a - b));
    await page.mouse.move(5, 5);
    await screenshot(page, "live-35-list-columns-1440");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "live-36-list-columns-390");
    expect(await hasHorizontalScroll(page)).toBe(false);
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 60_000);

  test("a signed-in user's choice of columns survives a reload of the Live screen", async () => {
    // A new user's org has not seen a program: the onboarding overlay opens first.
    const skipOnboarding = async () => {
      await page.getByRole("button", { name: "I'll do this later" }).click();
      await page.getByRole("dialog").waitFor({ state: "detached" });
    };
    await page.goto(suite.server.baseUrl + suite.home);
    await skipOnboarding();
    expect(await page.locator("iframe").getAttribute("src")).toMatch(/[?&]user=[^&#]+/);
    await frame().getByText("Columns", { exact: true }).click();
    await frame().getByRole("checkbox", { name: "Protocol" }).check();
    await frame().getByRole("checkbox", { name: "Time" }).uncheck();
    await page.reload();
    await skipOnboarding();
    await frame().getByText("Columns", { exact: true }).click();
    expect(await frame().getByRole("checkbox", { name: "Protocol" }).isChecked()).toBe(true);
    expect(await frame().getByRole("checkbox", { name: "Time" }).isChecked()).toBe(false);
    expect(suite.pageErrors).toEqual([]);
  }, 60_000);
});
