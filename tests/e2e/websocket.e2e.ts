import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { startSmtpServer } from "../support/smtp.ts";
import {
  launchBrowser,
  type RunningBrowser,
  type RunningServer,
  root,
  screenshot,
  signInByEmail,
  startServer,
  watchPageErrors,
} from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// WebSocket messages end to end: Chromium talks to a WebSocket echo server (permessage-deflate on) run under
// `tapscope run`; the browser gets what it gets untraced, and the Live screen shows the messages, in the list and in
// the handshake's detail, at 1440 and 390 px.

const bun = join(root, "node_modules/.bin/bun");
const DESKTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];
let livePath = "";
const programs: Array<{ stop: () => Promise<void> }> = [];

type Conversation = { got: string[]; code: number; reason: string; extensions: string };

/** The echo server, traced (with `token`) or not; resolves with its port once it listens. */
async function startEcho(token?: string): Promise<number> {
  const program = [bun, join(root, "tests/e2e/websocket-program.ts")];
  const proc = Bun.spawn(token ? [bun, join(root, "src/main.ts"), "run", "--", ...program] : program, {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TAPSCOPE_ENDPOINT: server.baseUrl, TAPSCOPE_TOKEN: token ?? "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  programs.push({
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  });
  let text = "";
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    const port = Number(/listening (\d+)/.exec(text)?.[1] ?? 0);
    if (port) return port;
  }
  throw new Error(`the echo server did not start: ${text}${await new Response(proc.stderr).text()}`);
}

/** Chromium opens the program's page, whose script holds the conversation; resolves with what it received. */
async function converse(port: number): Promise<Conversation> {
  const tab = await browser.context.newPage();
  try {
    await tab.goto(`http://127.0.0.1:${port}/`);
    return await tab.evaluate(() => (window as unknown as { conversation: Promise<Conversation> }).conversation);
  } finally {
    await tab.close();
  }
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startServer({ SMTP_URL: smtp.url });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  pageErrors = watchPageErrors(page);
}, 120_000);

afterAll(async () => {
  for (const p of programs) await p.stop();
  await browser?.close();
  await server?.stop();
  await smtp?.close();
});

describe("WebSocket messages in the browser", () => {
  test("Chromium's conversation with a traced server is what it is untraced", async () => {
    livePath = await signInByEmail(page, server.baseUrl, smtp, "ws@example.test");
    const token = await page.evaluate(async () => {
      const post = async (name: string, body: unknown) =>
        (
          await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        ).json();
      const { orgs } = await post("ListOrgs", {});
      const { namespaces } = await post("ListNamespaces", { orgId: orgs[0].orgId });
      return (await post("GenerateNamespaceToken", { namespaceId: namespaces[0].namespaceId })).token as string;
    });
    const untraced = await converse(await startEcho());
    expect(untraced.got).toEqual([
      'echo: {"op":"subscribe","topic":"prices","user":"ann"}',
      "text of 10006 characters",
      "binary 0,1,2,253,254,255",
    ]);
    expect(untraced.extensions).toContain("permessage-deflate");
    const traced = await converse(await startEcho(token));
    expect(traced).toEqual(untraced);
  }, 90_000);

  test("the Live list shows each message with its direction; the handshake's detail lists and opens them (1440 px)", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.baseUrl}${livePath}`);
    const frame = liveFrame(page).locator;
    const messages = frame.locator("[role=row][data-ws-direction]");
    // The close each way is recorded too: 3 messages and a close from the browser, as many from the server.
    await page.waitForFunction(
      () => {
        const doc = document.querySelector("iframe")?.contentDocument;
        return (doc?.querySelectorAll("[role=row][data-ws-direction]").length ?? 0) >= 8;
      },
      undefined,
      { timeout: 20_000 },
    );
    expect(await messages.count()).toBe(8);
    expect(await frame.locator('[role=row][data-ws-direction=client] [aria-label="from the client"]').count()).toBe(4);
    expect(await frame.locator('[role=row][data-ws-direction=server] [aria-label="from the server"]').count()).toBe(4);
    // The message and its echo.
    expect(await messages.filter({ hasText: '{"op":"subscribe","topic":"prices","user":"ann"}' }).count()).toBe(2);
    expect(await messages.filter({ hasText: 'echo: {"op":"subscribe"' }).count()).toBe(1);
    expect(await messages.filter({ hasText: "close 1000 bye" }).count()).toBe(2);
    await screenshot(page, "websocket-1440-live-list");

    await frame.locator("[role=row][data-event-id]").filter({ hasText: "/chat?room=e2e" }).click();
    const detail = frame.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    expect(await detail.getByTestId("ws-summary").textContent()).toMatch(
      /^↑ 4 from the client \(.+\) · ↓ 4 from the server \(.+\) · closed 1000 bye$/,
    );
    const list = detail.getByRole("list", { name: "WebSocket messages" });
    const items = list.getByRole("listitem");
    expect(await items.count()).toBe(8);
    expect(await items.nth(0).textContent()).toContain('{"op":"subscribe","topic":"prices","user":"ann"}');
    expect(await items.nth(0).locator('[aria-label="from the client"]').count()).toBe(1);
    expect(await list.textContent()).toContain('echo: {"op":"subscribe"');
    await items.nth(0).getByRole("button").click();
    const body = detail.getByTestId("ws-message-body");
    expect(await body.textContent()).toContain("compressed");
    expect(await body.locator("pre").textContent()).toBe('{\n  "op": "subscribe",\n  "topic": "prices",\n  "user": "ann"\n}');
    await screenshot(page, "websocket-1440-detail");
    await body.getByRole("radio", { name: "Hex" }).click();
    expect(await body.getByTestId("hex").textContent()).toContain("7b 22 6f 70");
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("at 390 px the detail is a sheet with the same messages; the toggle hides messages from the list", async () => {
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    const frame = liveFrame(page).locator;
    const detail = frame.getByRole("region", { name: "Request detail" });
    await detail.getByRole("list", { name: "WebSocket messages" }).scrollIntoViewIfNeeded();
    await screenshot(page, "websocket-390-detail");
    const list = detail.getByRole("list", { name: "WebSocket messages" });
    const box = await list.boundingBox();
    expect(box!.width).toBeLessThanOrEqual(PHONE.width);
    await detail.getByRole("button", { name: "Close detail" }).click();
    await screenshot(page, "websocket-390-live-list");
    const toggle = frame.getByRole("button", { name: "WebSocket messages" });
    expect(await toggle.getAttribute("aria-pressed")).toBe("true");
    await toggle.click();
    await frame.locator('button[aria-pressed="false"][aria-label="WebSocket messages"]').waitFor();
    await frame.locator("[role=row][data-ws-direction]").first().waitFor({ state: "detached" });
    await screenshot(page, "websocket-390-live-list-messages-off");
    expect(await frame.locator("[role=row][data-event-id]").filter({ hasText: "/chat?room=e2e" }).count()).toBe(1);
    await toggle.click();
    await frame.locator("[role=row][data-ws-direction]").first().waitFor();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("a filter on the messages' text finds them (ws.message contains)", async () => {
    await page.setViewportSize(DESKTOP);
    const input = page.getByRole("textbox", { name: "Filter" });
    await input.fill('ws.message contains "prices"');
    await input.press("Enter");
    const frame = liveFrame(page).locator;
    await frame
      .getByTestId("event-count")
      .filter({ hasText: /^2 requests \(of/ })
      .waitFor();
    const texts = await frame.locator("[role=row][data-event-id]").allTextContents();
    expect(texts).toHaveLength(2);
    for (const t of texts) expect(t).toContain('"topic":"prices"');
    await input.blur();
    await page.getByRole("list", { name: "Suggestions" }).waitFor({ state: "detached" });
    await screenshot(page, "websocket-1440-filtered");
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
