import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { hasHorizontalScroll, type RunningServer, screenshot, signedInSuite } from "./harness.ts";
import { liveFrame, type RunningProgram, startProgram, startUpstream } from "./live-harness.ts";

// The signed-in Live screen in Chromium: onboarding with a real token, a program under `tapscope run` with
// that token, live rows, filters, saved suggestions, and Copy link reopening a request.

let server: RunningServer;
let program: RunningProgram | undefined;
let secondProgram: RunningProgram | undefined;
let page: Page;
let pageErrors: string[];
const upstream = startUpstream();
let livePath = "";
const email = "grace@example.test";
const rows = () => liveFrame(page).locator.locator("[role=row][data-event-id]");

const suite = signedInSuite({
  timeoutMs: 10_000,
  prepare: ({ browser, server }) => browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl }),
});

beforeAll(() => {
  ({ server, page, pageErrors } = suite);
});

afterAll(async () => {
  await program?.stop();
  await secondProgram?.stop();
  upstream.stop();
});

const call = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${program!.port}${path}`, init);

describe("Live screen", () => {
  test("a new user lands on the Live screen with the onboarding overlay", async () => {
    livePath = await suite.signIn(email);
    await page.getByRole("heading", { name: "Connect your backend" }).waitFor();
    for (const stack of ["Python", "Node.js", "Next.js", "Go", "Other"])
      expect(await page.getByRole("button", { name: stack, exact: true }).count()).toBe(1);
    await screenshot(page, "live-10-onboarding-step1");
  }, 30_000);

  test("step 2 shows real commands with a fresh token; Finish waits for a connection", async () => {
    await page.getByRole("button", { name: "Node.js", exact: true }).click();
    await page
      .getByTestId("command-1")
      .filter({ hasText: /^export TAPSCOPE_TOKEN=\S{20,}$/ })
      .waitFor();
    expect(await page.getByTestId("command-0").textContent()).toBe(`curl -fsSL ${server.baseUrl}/install.sh | sh`);
    expect(await page.getByTestId("command-2").textContent()).toBe("tapscope run -- node server.js");
    expect(await page.getByRole("status").filter({ hasText: "Waiting for connections…" }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "Finish" }).isDisabled()).toBe(true);
    await screenshot(page, "live-11-onboarding-step2");

    const token = (await page.getByTestId("command-1").textContent())!.replace("export TAPSCOPE_TOKEN=", "");
    program = await startProgram(server.baseUrl, { token, upstreamUrl: upstream.url });
    expect(program.linkUrl).toBeNull();
    await page.getByRole("status").filter({ hasText: "Connected!" }).waitFor({ timeout: 5000 });
    expect(await page.getByRole("button", { name: "Finish" }).isEnabled()).toBe(true);
    expect(await page.getByRole("button", { name: "I'll do this later" }).count()).toBe(0);
    await screenshot(page, "live-12-onboarding-connected");
    await page.getByRole("button", { name: "Finish" }).click();
    await page.getByRole("dialog").waitFor({ state: "detached" });
  }, 30_000);

  test("requests of the namespace appear live within a second", async () => {
    await liveFrame(page).locator.locator("[data-testid=connection][data-state=open]").waitFor();
    const started = Date.now();
    await call("/hello?q=live");
    await rows().filter({ hasText: "/hello?q=live" }).waitFor({ timeout: 1000 });
    expect(Date.now() - started).toBeLessThan(1000);
    await call("/echo", { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
    await call("/checkout");
    await rows().filter({ hasText: "/checkout" }).waitFor();
    expect(await rows().count()).toBe(4);
    await screenshot(page, "live-13-screen-rows");
  });

  test("a filter applies, is remembered as a suggestion after a reload, and duplicates are refused", async () => {
    const input = page.getByRole("textbox", { name: "Filter" });
    await input.fill('request.method == "POST"');
    await input.press("Enter");
    await page.locator("[data-pending]").waitFor({ state: "detached" });
    await liveFrame(page).locator.getByTestId("event-count").filter({ hasText: "2 requests (of 4)" }).waitFor();
    await input.fill('REQUEST.METHOD == "post"');
    expect(await page.getByRole("button", { name: "Add filter" }).isDisabled()).toBe(true);
    await input.fill("");
    await screenshot(page, "live-14-screen-filtered");

    await page.reload();
    await page.getByRole("heading", { name: "Live", exact: true }).waitFor();
    await page.getByRole("textbox", { name: "Filter" }).focus();
    const suggestions = page.getByRole("list", { name: "Suggestions" });
    await suggestions.waitFor();
    expect(await suggestions.locator("li").count()).toBeLessThanOrEqual(7);
    expect(await suggestions.locator("li").first().textContent()).toBe('request.method == "POST"used 1×');
    await screenshot(page, "live-15-screen-suggestions");
  });

  test("Copy link reopens the request", async () => {
    await page.getByRole("heading", { name: "Live", exact: true }).click();
    await rows().filter({ hasText: "/checkout" }).click();
    const detail = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    await detail.getByRole("button", { name: "Copy link" }).click();
    await detail.getByRole("button", { name: "Copied!" }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    const url = new URL(copied);
    expect(url.pathname).toBe(livePath);
    const eventId = url.searchParams.get("event");
    expect(eventId).toMatch(/^[0-9a-f-]{36}$/);
    await page.goto(copied);
    const reopened = liveFrame(page).locator.getByRole("region", { name: "Request detail" });
    await reopened.getByTestId("detail-url").filter({ hasText: "/checkout" }).waitFor();
    expect(await reopened.getByRole("list", { name: "Outbound calls" }).textContent()).toContain("/v1/charges");
    await screenshot(page, "live-16-screen-copy-link");
    expect(pageErrors).toEqual([]);
  });

  test("a new namespace with no program says how to connect one, at 1440 and 390 px, until one connects", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.evaluate(async () => {
      const post = async (name: string, body: unknown) =>
        (
          await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        ).json();
      const { orgs } = await post("ListOrgs", {});
      await post("CreateNamespace", { orgId: orgs[0].orgId, name: "payments" });
    });
    await page.goto(`${server.baseUrl}/dashboard/payments/live`);
    const connect = page.getByRole("region", { name: "No program is connected to payments" });
    await connect.waitFor();
    // The org has seen a program already: no overlay, the panel above the list says what to do.
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect(await connect.getByTestId("command-0").textContent()).toBe(`curl -fsSL ${server.baseUrl}/install.sh | sh`);
    await connect
      .getByTestId("command-1")
      .filter({ hasText: /^export TAPSCOPE_TOKEN=\S{20,}$/ })
      .waitFor();
    expect(await connect.getByTestId("command-2").textContent()).toBe("tapscope run -- <your command>");
    await liveFrame(page).locator.getByText("No program is connected.").waitFor();
    expect(await liveFrame(page).locator.getByText("Send a request to your program").count()).toBe(0);
    await screenshot(page, "live-17-new-namespace-1440");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    expect(await hasHorizontalScroll(page)).toBe(false);
    const token = (await connect.getByTestId("command-1").textContent())!.replace("export TAPSCOPE_TOKEN=", "");
    const tokenBox = (await connect.getByTestId("command-1").boundingBox())!;
    expect(tokenBox.x + tokenBox.width).toBeLessThanOrEqual(390);
    await screenshot(page, "live-18-new-namespace-390");

    // The token shown is the namespace's: a program run with it is listed here, and the panel goes.
    secondProgram = await startProgram(server.baseUrl, { token, upstreamUrl: upstream.url });
    await connect.waitFor({ state: "detached", timeout: 5000 });
    await fetch(`http://127.0.0.1:${secondProgram.port}/hello?q=payments`);
    await rows().filter({ hasText: "/hello?q=payments" }).waitFor();
    expect(await rows().filter({ hasText: "/checkout" }).count()).toBe(0);
    await screenshot(page, "live-19-new-namespace-connected-390");
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
