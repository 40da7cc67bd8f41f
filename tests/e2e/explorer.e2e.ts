import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { namespaceTokenOf, type RunningServer, root, screenshot, signedInSuite } from "./harness.ts";
import { type RunningProgram, startProgram, startUpstream } from "./live-harness.ts";

// The requests explorer in Chromium over the real query tunnel: a namespace filled through the real ingest
// path (the publisher, with a namespace token) with generated events over six hours, plus live requests
// from a program under `tapscope run`.

const bun = join(root, "node_modules/.bin/bun");
const H = 3_600_000;
let server: RunningServer;
let program: RunningProgram | undefined;
let page: Page;
let pageErrors: string[];
const upstream = startUpstream();
const email = "ada@example.test";
let requestsPath = "";
const endMs = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000;
const global = { startMs: endMs - 6 * H, endMs };
const generated = 3000;

const stateParam = (s: object) => Buffer.from(JSON.stringify(s)).toString("base64");
const currentState = async () => {
  const raw = new URL(page.url()).searchParams.get("filter");
  return JSON.parse(Buffer.from(String(raw), "base64").toString("utf8")) as {
    clauses: { column: string; op: string; value: unknown }[];
    global: { lowerMs: number; upperMs: number };
    focus: { lowerMs: number; upperMs: number } | null;
    text?: string[];
    tz?: string;
  };
};
const resultCount = async () => Number(((await page.getByTestId("result-count").textContent()) ?? "").replace(/[^\d]/g, ""));
const rows = () => page.locator("[role=row][data-event-id]");

async function settled() {
  await page.waitForFunction(() => !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading…"));
}

const suite = signedInSuite({
  timeoutMs: 15_000,
  // Keeps the page's WebSockets reachable, so a test can break the query tunnel.
  prepare: ({ page }) =>
    page.addInitScript(() => {
      const Original = window.WebSocket;
      const sockets: WebSocket[] = [];
      (window as unknown as { __sockets: WebSocket[] }).__sockets = sockets;
      window.WebSocket = class extends Original {
        constructor(url: string | URL, protocols?: string | string[]) {
          super(url, protocols);
          sockets.push(this);
        }
      };
    }),
});

beforeAll(() => {
  ({ server, page, pageErrors } = suite);
});

afterAll(async () => {
  await program?.stop();
  upstream.stop();
});

describe("Requests explorer", () => {
  test("sign in, fill the namespace through the publisher and tapscope run", async () => {
    requestsPath = (await suite.signIn(email)).replace(/\/live$/, "/requests");

    const token = await namespaceTokenOf(page);
    expect(token.length).toBeGreaterThan(20);

    // Generated traffic over the six hours before now, through JoinPublisher + the publisher WebSocket.
    const child = Bun.spawn(
      [
        bun,
        join(root, "bench/store/publish-child.ts"),
        server.baseUrl,
        token,
        String(generated),
        String((endMs - 6 * H) * 1000),
        String((endMs - 2 * 60_000) * 1000),
        "7",
      ],
      { cwd: root, stdout: "pipe", stderr: "pipe" },
    );
    expect(await child.exited).toBe(0);
    // The child says when it starts publishing, then its stats on the last line.
    const lines = (await new Response(child.stdout).text()).trim().split("\n");
    const stats = JSON.parse(lines[lines.length - 1] ?? "{}");
    expect(stats.sent).toBe(generated);

    program = await startProgram(server.baseUrl, { token, upstreamUrl: upstream.url });
    const call = (path: string) => fetch(`http://127.0.0.1:${program!.port}${path}`);
    await call("/hello?q=explorer");
    await call("/checkout");
    await call("/hello?q=again");
  }, 90_000);

  test("the histogram and the rows of the global range", async () => {
    const state = { clauses: [], global: { lowerMs: global.startMs, upperMs: global.endMs }, focus: null };
    await page.goto(`${server.baseUrl}${requestsPath}?filter=${encodeURIComponent(stateParam(state))}`);
    // The live requests arrive within a few seconds; retry the query until they are in.
    const deadline = Date.now() + 15_000;
    for (;;) {
      await page.getByTestId("result-count").waitFor();
      await settled();
      if ((await resultCount()) >= generated + 4) break;
      if (Date.now() > deadline) throw new Error(`only ${await resultCount()} rows`);
      await page.reload();
    }
    expect(await page.getByTestId("histogram-total").textContent()).toBe(`${(await resultCount()).toLocaleString("en-US")} requests`);
    expect(await page.locator("[data-testid=histogram] rect.fill-red-500").count()).toBeGreaterThan(0);
    expect(await page.getByTestId("axis").locator("span").count()).toBeGreaterThanOrEqual(6);
    expect(await rows().first().textContent()).toContain("/hello");
    await screenshot(page, "explorer-01-global");
  }, 40_000);

  test("brushing a range makes the list follow; shift, zoom, clear", async () => {
    const total = await resultCount();
    const box = (await page.getByTestId("histogram").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.25, box.y + box.height * 0.4);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.4, { steps: 5 });
    await page.mouse.up();
    await page.getByTestId("focus-range").waitFor();
    await settled();
    const s = await currentState();
    expect(s.focus).not.toBeNull();
    expect(s.focus!.lowerMs % 300_000).toBe(0); // 6 h picks 5 min buckets: snapped to the grid
    expect(s.focus!.upperMs % 300_000).toBe(0);
    const inFocus = await resultCount();
    expect(inFocus).toBeGreaterThan(0);
    expect(inFocus).toBeLessThan(total);
    const times = await rows().locator("[role=cell]:first-child").allTextContents();
    for (const t of times) {
      const ms = Date.parse(`${t.replace(" ", "T")}Z`);
      expect(ms).toBeGreaterThanOrEqual(s.focus!.lowerMs);
      expect(ms).toBeLessThan(s.focus!.upperMs);
    }
    await screenshot(page, "explorer-02-brushed");

    await page.getByRole("button", { name: "Zoom to focus" }).click();
    await page.waitForFunction(() => !document.querySelector("[data-testid=focus-range]"));
    const zoomed = await currentState();
    expect(zoomed.global).toEqual(s.focus!);
    await settled();
    expect(await resultCount()).toBe(inFocus);
    await screenshot(page, "explorer-03-zoomed");

    const beforeShift = new URL(page.url()).search;
    await page.getByRole("button", { name: "Shift back" }).click();
    await page.waitForFunction((before) => document.location.search !== before, beforeShift);
    const shifted = await currentState();
    const span = s.focus!.upperMs - s.focus!.lowerMs;
    expect(shifted.global.upperMs).toBeLessThan(zoomed.global.upperMs);
    expect(shifted.global.upperMs - shifted.global.lowerMs).toBe(span);
    await page.goBack();
    await page.waitForFunction((before) => document.location.search === before, beforeShift);
    expect((await currentState()).global).toEqual(zoomed.global);
    await page.goBack();
    await page.getByTestId("focus-range").waitFor();
    await page.getByRole("button", { name: "Clear focus" }).click();
    await page.waitForFunction(() => !document.querySelector("[data-testid=focus-range]"));
    await settled();
    expect(await resultCount()).toBe(total);
  }, 40_000);

  test("time zone switch, filter by status and URL, open a request and save it as HAR, reload keeps the view", async () => {
    await page.getByRole("button", { name: "Local", exact: true }).click();
    await page.getByTestId("global-range").filter({ hasNotText: "UTC" }).waitFor();
    // The zone is a setting of the browser (every screen shows times in it), not part of the view's URL.
    expect(await page.getByRole("button", { name: "Local", exact: true }).getAttribute("aria-pressed")).toBe("true");
    expect((await currentState()).tz).toBeUndefined();
    await page.getByRole("button", { name: "UTC", exact: true }).click();
    await page.getByTestId("global-range").filter({ hasText: "UTC" }).waitFor();

    // Status by the filter input, its value picked from the autocomplete.
    const input = page.getByRole("textbox", { name: "Filter" });
    await input.click();
    await input.pressSequentially("response.status == 50");
    await page.getByRole("list", { name: "Completions" }).getByRole("button", { name: /^500/ }).click();
    await input.press("Enter");
    await page.getByRole("button", { name: "Remove filter response.status == 500" }).waitFor();
    // The new query's rows replace the old ones (on a busy machine the old ones can still show as the chip appears).
    await page
      .waitForFunction(() => {
        const cells = [...document.querySelectorAll("[role=row][data-event-id] [role=cell]:nth-child(3)")];
        return cells.length > 0 && cells.every((cell) => cell.textContent === "500");
      })
      .catch(() => {});
    await settled();
    const statuses = await rows().locator("[role=cell]:nth-child(3)").allTextContents();
    expect(statuses.length).toBeGreaterThan(0);
    expect(new Set(statuses)).toEqual(new Set(["500"]));
    await screenshot(page, "explorer-04-status-500");
    const beforeRemove = page.url();
    await page.getByRole("button", { name: "Remove filter response.status == 500" }).click();
    // The removal reaches the URL, which remounts the filter bar with the URL's chips: text typed before that is lost
    // (the bar's own race, to be mended in the UI; this test is about the filters, so it waits).
    await page.waitForURL((url) => url.href !== beforeRemove);
    await page.waitForFunction(() => !document.querySelector("[data-pending]"));

    // URL by the filter language, as on the Live screen.
    await input.fill('request.url contains "/checkout"');
    await input.press("Enter");
    await page
      .waitForFunction(() => document.querySelector("[data-testid=result-count]")?.textContent === "1 request")
      .catch(async (err) => {
        await screenshot(page, "explorer-debug-url-filter");
        throw err;
      });
    await settled();
    expect(await rows().count()).toBe(1);
    await rows().first().click();
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    expect(await detail.getByTestId("detail-url").textContent()).toContain("/checkout");
    expect(await detail.textContent()).toContain("/charge");
    await screenshot(page, "explorer-05-detail");
    const [download] = await Promise.all([page.waitForEvent("download"), detail.getByRole("button", { name: "Save as HAR" }).click()]);
    const har = JSON.parse(readFileSync(String(await download.path()), "utf8"));
    expect(har.log.entries.length).toBeGreaterThanOrEqual(2);
    expect(har.log.entries.some((e: { request: { url: string } }) => e.request.url.endsWith("/checkout"))).toBe(true);

    const before = await currentState();
    await page.reload();
    await page.waitForFunction(() => document.querySelector("[data-testid=result-count]")?.textContent === "1 request");
    expect(await currentState()).toEqual(before);
    expect(await page.locator("[data-pending]").count()).toBe(0);
    expect(await page.getByRole("button", { name: 'request.url contains "/checkout"', exact: true }).count()).toBe(1);
    await screenshot(page, "explorer-06-reloaded");
    expect(pageErrors).toEqual([]);
  }, 40_000);

  test("an abnormally closed tunnel is reset and the next query opens a new one", async () => {
    const connection = page.locator("[data-connection]");
    expect(await connection.getAttribute("data-connection")).toBe("open");
    const opened = await page.evaluate(() => (window as unknown as { __sockets: WebSocket[] }).__sockets.length);
    await page.evaluate(() => {
      const sockets = (window as unknown as { __sockets: WebSocket[] }).__sockets;
      sockets[sockets.length - 1]?.close(4001, "test: abnormal");
    });
    await page.locator("[data-connection=idle]").waitFor();
    await page.getByRole("button", { name: 'Remove filter request.url contains "/checkout"' }).click();
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=result-count]")?.textContent?.replace(/\D/g, "")) > 1);
    await page.locator("[data-connection=open]").waitFor();
    expect(await page.evaluate(() => (window as unknown as { __sockets: WebSocket[] }).__sockets.length)).toBe(opened + 1);
    expect(await page.getByRole("alert").count()).toBe(0);
    await screenshot(page, "explorer-07-reconnected");
    expect(pageErrors).toEqual([]);
  });

  test("the results on their own page at /minified/", async () => {
    const count = await page.getByTestId("result-count").textContent();
    const href = await page.getByRole("link", { name: "Open these results on their own page" }).getAttribute("href");
    expect(href).toStartWith("/minified/?namespace=");
    await page.goto(`${server.baseUrl}${href}`);
    await page
      .getByTestId("result-count")
      .filter({ hasText: String(count) })
      .waitFor();
    await rows().filter({ hasText: "/checkout" }).click();
    await page.getByRole("region", { name: "Request detail" }).waitFor();
    await screenshot(page, "explorer-08-minified");
    expect(pageErrors).toEqual([]);
  });
});
