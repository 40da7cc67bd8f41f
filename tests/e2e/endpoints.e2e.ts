import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac, randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { startSmtpServer } from "../support/smtp.ts";
import { startTracedProgram, type TracedProgram } from "../support/traced-program.ts";
import {
  hasHorizontalScroll,
  launchBrowser,
  type RunningBrowser,
  type RunningServer,
  root,
  screenshot,
  signInByEmail,
  startServer,
  watchPageErrors,
} from "./harness.ts";

// The Endpoints screen in Chromium, end to end: a program with varied routes under `tapscope run` (the real capture
// engine and publisher), the table sorted by p99, a slow endpoint clicked into the Requests explorer, the histogram's
// percentile lines, and an alert fired and resolved by e-mail (the in-process SMTP server) and by a signed webhook
// (a local receiver), at 1440 and 390 px.

const bun = join(root, "node_modules/.bin/bun");
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];
let program: TracedProgram | undefined;
const email = "grace@example.test";
let endpointsPath = "";

type Hook = { event: string; signature: string; body: string };
const hooks: Hook[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    hooks.push({
      event: req.headers.get("x-tapscope-event") ?? "",
      signature: req.headers.get("x-tapscope-signature") ?? "",
      body: await req.text(),
    });
    return new Response("ok");
  },
});

/** A duration as the screen prints it ("272ms", "1.20s", "850µs") in milliseconds. */
function shownMs(text: string): number {
  const m = /([\d.]+)\s*(µs|ms|s)\b/.exec(text);
  if (!m) throw new Error(`not a duration: ${text}`);
  return Number(m[1]) * ({ µs: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2]!]!;
}

const call = (path: string, method = "GET") => fetch(`http://127.0.0.1:${program!.port}${path}`, { method }).then((r) => r.text());

async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(250);
  }
}

/** The endpoints the table shows, top to bottom, as "METHOD route". */
const tableOrder = () =>
  page.locator("[data-testid=endpoints-table] tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-endpoint")));

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startServer({ SMTP_URL: smtp.url, ALERT_EVALUATION_SECONDS: "1", WEBHOOKS_TO_PRIVATE_ADDRESSES: "1" });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  pageErrors = watchPageErrors(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await program?.stop();
  await server?.stop();
  await smtp?.close();
  receiver.stop(true);
});

describe("Endpoints screen", () => {
  test("a traced program's routes: the table sorted by p99, a slow endpoint opened in the explorer, percentile lines", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    endpointsPath = (await signInByEmail(page, server.baseUrl, smtp, email)).replace(/\/live$/, "/endpoints");
    const token = await page.evaluate(async () => {
      const post = async (name: string, body: unknown) =>
        (
          await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        ).json();
      const { orgs } = await post("ListOrgs", {});
      const { namespaces } = await post("ListNamespaces", { orgId: orgs[0].orgId });
      return (await post("GenerateNamespaceToken", { namespaceId: namespaces[0].namespaceId })).token as string;
    });
    program = await startTracedProgram({
      command: [bun, join(root, "tests/e2e/endpoints-program.ts")],
      env: { TAPSCOPE_ENDPOINT: server.baseUrl, TAPSCOPE_TOKEN: token },
      ready: /listening on port \d+/,
    });
    // The program's first request warms it up (and shows as an endpoint of its own).
    await call("/mode?fail=0", "POST");
    for (let i = 1; i <= 12; i++) await call(`/users/${1000 + i}?tab=profile`);
    for (let i = 0; i < 4; i++) await call(`/orders/${randomUUID()}`);
    for (const day of ["2026-11-01", "2026-11-02"]) await call(`/v1/reports/${day}.csv`);

    await page.goto(`${server.baseUrl}${endpointsPath}`);
    // The requests reach the store within a few seconds: look again until all three routes are in.
    await until("the four routes", async () => {
      await page.getByTestId("endpoint-count").waitFor();
      await page.waitForFunction(() => !document.body.textContent?.includes("Loading…"));
      const order = await tableOrder().catch(() => []);
      if (order.length >= 4) return true;
      await page.reload();
      return false;
    });
    // Value segments became placeholders, the query string stayed out; busiest first by default.
    expect(await tableOrder()).toEqual(["GET /users/{id}", "GET /orders/{uuid}", "GET /v1/reports/{date}.csv", "POST /mode"]);
    const users = page.locator('tr[data-endpoint="GET /users/{id}"]');
    expect(await users.locator("td").nth(1).textContent()).toContain("12");

    await page.getByRole("columnheader", { name: "p99" }).getByRole("button").click();
    await page.waitForSelector("th[aria-sort=descending] >> text=p99");
    // Sorted by p99, slowest first; the program sleeps 150 ms on each order, so that endpoint's p99 is at least that.
    const p99s = await page
      .locator("[data-testid=endpoints-table] tbody tr [data-cell=p99]")
      .allTextContents()
      .then((cells) => cells.map(shownMs));
    expect(p99s).toEqual(p99s.toSorted((a, b) => b - a));
    expect(
      shownMs((await page.locator('tr[data-endpoint="GET /orders/{uuid}"] [data-cell=p99]').textContent()) ?? ""),
    ).toBeGreaterThanOrEqual(150);
    expect(
      await page.locator('tr[data-endpoint="GET /orders/{uuid}"] svg polyline, tr[data-endpoint="GET /orders/{uuid}"] svg circle').count(),
    ).toBeGreaterThan(0);
    expect(await hasHorizontalScroll(page)).toBe(false);
    await screenshot(page, "endpoints-01-sorted-1440");

    await page.locator('tr[data-endpoint="GET /orders/{uuid}"]').click();
    await page.waitForURL(/\/requests\?/);
    await page.getByTestId("result-count").waitFor();
    await until("the endpoint's requests", async () => (await page.getByTestId("result-count").textContent()) === "4 requests");
    const paths = await page.locator("[role=row][data-event-id] [role=cell]:nth-child(4)").allTextContents();
    expect(paths).toHaveLength(4);
    for (const p of paths) expect(p).toMatch(/\/orders\/[0-9a-f-]{36}$/);

    await page.getByRole("button", { name: "Percentiles" }).click();
    await page.waitForSelector("[data-testid=histogram][data-view=latency] path[data-line=p99][d*=H]", { state: "attached" });
    expect(new URL(page.url()).searchParams.get("chart")).toBe("latency");
    expect(await page.locator("[data-testid=histogram] path[data-line]").count()).toBe(3);
    expect(shownMs((await page.getByTestId("latency-max").textContent()) ?? "")).toBeGreaterThanOrEqual(150);
    await screenshot(page, "endpoints-02-percentiles-1440");

    // Brushing works the same in percentile mode.
    const box = (await page.getByTestId("histogram").boundingBox())!;
    // From the middle to past the right edge (the requests are in the last minute of the hour).
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width + 20, box.y + box.height * 0.5, { steps: 4 });
    await page.mouse.up();
    await page.getByTestId("focus-range").waitFor();
    expect(await page.locator("[data-testid=histogram] path[data-line=p99]").getAttribute("d")).toMatch(/^M[\d.]+ [\d.]+ H/);

    await page.locator("[role=row][data-event-id]").first().click();
    expect(await page.getByTestId("percentile-sentence").textContent()).toMatch(
      /^Slower than \d+ % of GET \/orders\/\{uuid\} in this range \(4 requests\)$/,
    );
  }, 120_000);

  test("an alert on the slow endpoint fires and resolves, by e-mail and by a signed webhook; state and history on the screen", async () => {
    await page.goto(`${server.baseUrl}${endpointsPath}`);
    await page.locator('tr[data-endpoint="GET /orders/{uuid}"]').waitFor();
    await page.getByRole("button", { name: "New alert" }).click();
    const form = page.getByRole("form", { name: "New alert" });
    await form.getByLabel("Name", { exact: true }).fill("orders failing");
    const endpoint = form.getByLabel("Endpoint");
    const value = await endpoint.locator("option", { hasText: "GET /orders/{uuid}" }).getAttribute("value");
    await endpoint.selectOption(value!);
    await form.getByLabel("Fires when").selectOption("server_errors");
    await form.getByLabel(/Threshold/).fill("50");
    await form.getByLabel(/Over the last/).fill("1");
    await form.getByLabel(/With at least/).fill("3");
    expect(await form.getByLabel(/E-mail/).inputValue()).toBe(email);
    await form.getByLabel(/Webhook URL/).fill(`http://127.0.0.1:${receiver.port}/hook`);
    await form.getByRole("button", { name: "Save alert" }).click();
    const secret = (await page.getByTestId("webhook-secret").textContent()) ?? "";
    expect(secret.length).toBeGreaterThan(20);
    const rule = page.locator('[data-rule="orders failing"]');
    await expect(rule.getAttribute("data-state")).resolves.toBe("ok");

    // Eight 500s against the four successes of the last minute: 67 % > 50 %.
    await call("/mode?fail=1", "POST");
    for (let i = 0; i < 8; i++) await call(`/orders/${randomUUID()}`);
    const fired = await until("the FIRING mail", async () => smtp.messages.find((m) => m.to.includes(email) && m.raw.includes("FIRING")));
    expect(fired.text).toContain("Fired: orders failing on GET /orders/{uuid}");
    const firedHook = await until("the fired webhook", async () => hooks.find((h) => h.event === "alert.fired"));
    const verify = (h: Hook) => {
      const [t, v1] = h.signature.split(",").map((part) => part.split("=")[1]);
      return createHmac("sha256", secret).update(`${t}.${h.body}`).digest("hex") === v1;
    };
    expect(verify(firedHook)).toBe(true);
    expect(JSON.parse(firedHook.body).alert.rule.endpoint.route).toBe("/orders/{uuid}");
    await page.reload();
    await until("the firing state", async () => {
      if ((await rule.getAttribute("data-state")) === "firing") return true;
      await page.reload();
      return false;
    });
    await screenshot(page, "endpoints-03-firing-1440");

    // Thirty successes bring the last minute's 5xx rate under 50 %.
    await call("/mode?fail=0", "POST");
    for (let i = 0; i < 30; i++) await call(`/orders/${randomUUID()}`);
    const resolved = await until("the Resolved mail", async () =>
      smtp.messages.find((m) => m.to.includes(email) && m.raw.includes("Resolved")),
    );
    expect(resolved.text).toContain("Resolved: orders failing");
    const resolvedHook = await until("the resolved webhook", async () => hooks.find((h) => h.event === "alert.resolved"));
    expect(verify(resolvedHook)).toBe(true);
    // One notification per change and channel.
    expect(hooks.map((h) => h.event)).toEqual(["alert.fired", "alert.resolved"]);

    await until("the ok state with its history", async () => {
      await page.reload();
      await rule.waitFor();
      return (await rule.getAttribute("data-state")) === "ok" && (await page.locator("[data-testid=alert-history] li").count()) === 2;
    });
    expect(await page.locator("[data-testid=alert-history] li").evaluateAll((l) => l.map((x) => x.getAttribute("data-kind")))).toEqual([
      "resolved",
      "fired",
    ]);
    await until("four deliveries sent", async () => {
      await page.reload();
      await page.getByTestId("alert-deliveries").waitFor();
      return (await page.locator('[data-testid=alert-deliveries] li[data-status="sent"]').count()) === 4;
    });
    await screenshot(page, "endpoints-04-resolved-1440");
  }, 120_000);

  test("an admin's route pattern wins over the template for requests taken in from then on", async () => {
    await page.goto(`${server.baseUrl}${endpointsPath}`);
    await page.locator('tr[data-endpoint="GET /users/{id}"]').waitFor();
    await page.getByTestId("route-patterns").locator("summary").click();
    const box = page.getByLabel("Route patterns, one a line");
    await page.waitForFunction(
      () => !(document.querySelector("[aria-label='Route patterns, one a line']") as HTMLTextAreaElement).disabled,
    );
    await box.fill("/users/{account}");
    await page.getByRole("button", { name: "Save patterns" }).click();
    await page.getByRole("status").filter({ hasText: "Saved" }).waitFor();
    // A pattern that cannot be kept is refused with its reason, and the saved list stays.
    await box.fill("users/{account}");
    await page.getByRole("button", { name: "Save patterns" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("must start with /");
    await call("/users/77");
    await until("the pattern's route", async () => {
      // A fresh "last hour" each time: a reload would keep the range the URL was given, ending before the request.
      await page.goto(`${server.baseUrl}${endpointsPath}`);
      await page.getByTestId("endpoint-count").waitFor();
      return (await page.locator('tr[data-endpoint="GET /users/{account}"]').count()) === 1;
    });
    // What was taken in before keeps its route.
    expect(await page.locator('tr[data-endpoint="GET /users/{id}"]').count()).toBe(1);
  }, 60_000);

  test("at 390 px the screen fits: the table scrolls inside its box, the page does not", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.baseUrl}${endpointsPath}`);
    await page.locator('tr[data-endpoint="GET /orders/{uuid}"]').waitFor();
    expect(await hasHorizontalScroll(page)).toBe(false);
    await screenshot(page, "endpoints-05-phone-390");
    await page.getByTestId("alerts").scrollIntoViewIfNeeded();
    expect(await hasHorizontalScroll(page)).toBe(false);
    await screenshot(page, "endpoints-06-phone-alerts-390");
    await page.locator('tr[data-endpoint="GET /users/{id}"]').click();
    await page.waitForURL(/\/requests\?/);
    // On a phone the explorer's chart is folded behind one bar.
    await page.getByRole("button", { name: "Filters and chart" }).click();
    await page.getByRole("button", { name: "Percentiles" }).click();
    await page.waitForSelector("[data-testid=histogram][data-view=latency] path[data-line=p50][d*=H]", { state: "attached" });
    expect(await hasHorizontalScroll(page)).toBe(false);
    await screenshot(page, "endpoints-07-phone-percentiles-390");
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
