import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { startTracedProgram, type TracedProgram } from "../support/traced-program.ts";
import { hasHorizontalScroll, launchBrowser, type RunningBrowser, type RunningServer, root, screenshot, startServer } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// A request in flight, as DevTools shows it: a Python handler that hangs under `tapscope run` (no token: the printed
// link), curl waiting a few seconds. While curl waits the Live list shows the request as pending, with the time waited
// so far ticking; when curl gives up, the recorded event (client aborted) takes its place. On the shared link's page,
// at 1440 and 390 px.

let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let program: TracedProgram & { linkUrl: string };

beforeAll(async () => {
  server = await startServer();
  const started = await startTracedProgram({
    command: ["python3", join(root, "tests/agent/fixtures/hang-server.py")],
    env: { TAPSCOPE_ENDPOINT: server.baseUrl, TAPSCOPE_TOKEN: "" },
    ready: /(?:See your requests live:|watch live at) (\S+)/,
  });
  program = { ...started, linkUrl: started.ready[1] as string };
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await program?.stop();
  await server?.stop();
});

const rowFor = (text: string) => liveFrame(page).locator.locator("[role=row][data-event-id]").filter({ hasText: text });

/** The seconds a pending row's wait cell shows ("1.52s"). */
async function waitedSeconds(text: string): Promise<number> {
  const shown = (await rowFor(text).locator("[data-pending=wait]").textContent()) ?? "";
  expect(shown).toMatch(/^\d+\.\d\ds$/);
  return Number.parseFloat(shown);
}

async function pendingThenAborted(path: string, shot: string): Promise<void> {
  const curl = Bun.spawn(["curl", "-s", "--max-time", "6", `http://127.0.0.1:${program.port}${path}`]);
  const row = rowFor(path);
  await row.locator("[data-pending=status]").waitFor();
  expect(curl.exitCode).toBeNull();
  expect(await row.locator("[data-pending=status]").textContent()).toBe("pending");
  expect(await row.getAttribute("data-pending")).toBe("true");
  expect(await row.locator("[data-pending=wait]").isVisible()).toBe(true);
  // The wait ticks while the request waits.
  const first = await waitedSeconds(path);
  expect(first).toBeGreaterThanOrEqual(1);
  await liveFrame(page)
    .frame()
    .waitForFunction((before) => {
      const cell = document.querySelector("[role=row][data-pending] [data-pending=wait]");
      return Number.parseFloat(cell?.textContent ?? "0") > before;
    }, first);
  expect(await hasHorizontalScroll(page)).toBe(false);
  await screenshot(page, shot);
  if (shot === "pending-1440") {
    await row.click();
    const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    // The detail says it is waiting, never that it took no time.
    expect(await detail.locator("[data-pending=status]").textContent()).toBe("pending");
    expect(await detail.locator("[data-pending=wait]").textContent()).toMatch(/^\d+\.\d\ds$/);
    expect(await detail.getByTestId("detail-url").textContent()).toContain("/hang?pending=wide");
    await screenshot(page, "pending-detail-1440");
    await page.keyboard.press("Escape");
  }

  // curl gives up: the recorded event replaces the pending row (same row, now marked aborted, with its wait).
  expect(await curl.exited).toBe(28);
  await row.locator("[data-unanswered=client_aborted]").waitFor({ timeout: 20_000 });
  expect(await row.count()).toBe(1);
  expect(await row.locator("[data-pending]").count()).toBe(0);
  expect(await row.getAttribute("data-pending")).toBeNull();
}

test("a request in flight shows in Live as pending with its wait ticking, then becomes the recorded row (1440 and 390 px)", async () => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(program.linkUrl);
  await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();
  await pendingThenAborted("/hang?pending=wide", "pending-1440");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(program.linkUrl);
  await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();
  await pendingThenAborted("/hang?pending=phone", "pending-390");
}, 90_000);
