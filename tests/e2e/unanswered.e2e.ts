import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { startTracedProgram, type TracedProgram } from "../support/traced-program.ts";
import { hasHorizontalScroll, launchBrowser, type RunningBrowser, type RunningServer, root, screenshot, startServer } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// A handler that hangs, as a new user meets it: a Python server under `tapscope run` (no token: the printed link),
// curl giving up after a second. The request shows in Live as soon as curl gives up, marked with why, findable with
// a filter, and its detail says how long it waited.

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

test("a hung request shows in Live once the client gives up: marked, filtered, its wait in the detail (1440 and 390 px)", async () => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(program.linkUrl);
  await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();

  const curl = Bun.spawn(["curl", "-s", "--max-time", "1", `http://127.0.0.1:${program.port}/hang?from=e2e`]);
  expect(await curl.exited).toBe(28);
  await fetch(`http://127.0.0.1:${program.port}/ok`);
  const hung = rowFor("/hang?from=e2e");
  const mark = hung.locator("[data-unanswered=client_aborted]");
  await mark.waitFor();
  expect(await mark.locator("[aria-hidden=true]").textContent()).toBe("aborted");
  expect(await mark.getAttribute("title")).toMatch(/^No response: the client gave up after (\d{3}ms|\d\.\d\ds)$/);
  await rowFor("/ok").waitFor();

  const input = page.getByRole("textbox", { name: "Filter" });
  await input.fill('response.unanswered != ""');
  await input.press("Enter");
  await liveFrame(page).locator.getByTestId("event-count").filter({ hasText: "1 request (of 2)" }).waitFor();
  expect(await rowFor("/ok").count()).toBe(0);
  // Close the suggestions under the filter box: they cover the list until the box loses focus.
  await page.getByTestId("countdown").click();

  await hung.click();
  const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
  expect(await detail.getByTestId("detail-unanswered").textContent()).toMatch(
    /^No response: the client gave up after (\d{3}ms|\d\.\d\ds)$/,
  );
  await screenshot(page, "unanswered-1440");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(program.linkUrl);
  await rowFor("/hang?from=e2e").locator("[data-unanswered]").waitFor();
  expect(await rowFor("/hang?from=e2e").locator("[data-unanswered]").isVisible()).toBe(true);
  expect(await hasHorizontalScroll(page)).toBe(false);
  await screenshot(page, "unanswered-390");
}, 90_000);
