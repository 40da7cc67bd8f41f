import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Frame, Page } from "playwright-core";
import { type DatabaseServer, dbPassword, startMariadb, startPostgres, startRedisServer } from "../support/databases.ts";
import { freePort } from "../support/ports.ts";
import { launchBrowser, type RunningBrowser, type RunningServer, root, screenshot, startServer, watchPageErrors } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// A Flask service on real PostgreSQL, MariaDB and Redis (psycopg2, PyMySQL, redis-py) under `tapscope run`, publishing
// to a real server; its shared link opened in Chromium at 1440 and 390 px: each request with its statements as
// children, the slowest flagged as the culprit, and a statement's own detail.

const DESKTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };
let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];
let databases: DatabaseServer[] = [];
let service: { proc: Bun.Subprocess<"ignore", "pipe", "pipe">; port: number; linkUrl: string; output: string[] };

beforeAll(async () => {
  const [pg, maria, redis] = await Promise.all([startPostgres({ auth: "md5" }), startMariadb(), startRedisServer()]);
  databases = [pg, maria, redis];
  server = await startServer();
  const port = await freePort();
  const proc = Bun.spawn(
    [
      join(root, "node_modules/.bin/bun"),
      join(root, "src/main.ts"),
      "run",
      "--",
      "/usr/bin/python3",
      join(root, "tests/agent/fixtures/db-service.py"),
    ],
    {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        TAPSCOPE_ENDPOINT: server.baseUrl,
        PORT: String(port),
        PG_PORT: String(pg.port),
        MYSQL_PORT: String(maria.port),
        REDIS_PORT: String(redis.port),
        DB_PASSWORD: dbPassword,
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const output: string[] = [];
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const decoder = new TextDecoder();
      const reader = stream.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) output.push(decoder.decode(chunk.value));
    })();
  }
  const deadline = Date.now() + 60_000;
  let linkUrl = "";
  for (;;) {
    const text = output.join("");
    linkUrl = /(?:See your requests live:|watch live at) (\S+)/.exec(text)?.[1] ?? "";
    if (linkUrl && /\bready\b/.test(text)) break;
    if (proc.exitCode !== null) throw new Error(`the service exited (${proc.exitCode}): ${text}`);
    if (Date.now() > deadline) throw new Error(`the service did not start: ${text}`);
    await Bun.sleep(100);
  }
  service = { proc, port, linkUrl, output };
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  pageErrors = watchPageErrors(page);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (service) {
    service.proc.kill("SIGTERM");
    await service.proc.exited;
  }
  await server?.stop();
  for (const db of databases) db.stop();
});

const call = async (path: string) => {
  // Werkzeug's development server may still be binding when the run prints ready.
  for (let tries = 0; ; tries++) {
    try {
      return await (await fetch(`http://127.0.0.1:${service.port}${path}`)).text();
    } catch (error) {
      if (tries > 50) throw error;
      await Bun.sleep(100);
    }
  }
};
const frame = () => liveFrame(page);
const rows = () => frame().locator.locator("[role=row][data-event-id]");
const rowFor = (text: string) => rows().filter({ hasText: text });

/** Each step of a waterfall as "kind status text" (the culprit's badge included), the own time as "own time". */
const stepsOf = (list: ReturnType<Page["locator"]>) =>
  list.getByRole("listitem").evaluateAll((items) =>
    items.map((li) => {
      const cells = li.querySelector("button")?.children;
      if (!cells) return "own time";
      return [cells[0]!.textContent, cells[1]!.textContent, cells[2]!.firstElementChild!.textContent].join(" ");
    }),
  );

/** Whether anything in the frame sticks out sideways. */
const scrollsSideways = (f: Frame) => f.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

describe("database calls in the dashboard", () => {
  test("1440 px: the calls are rows of their own, and a request's waterfall flags the slow statement as the culprit", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(service.linkUrl);
    await frame().locator.locator("[data-testid=connection][data-state=open]").waitFor();
    await call("/orders/1");
    await call("/slow");
    await call("/broken");

    const statementRow = rowFor("SELECT id, item FROM orders WHERE id = 1");
    await statementRow.waitFor();
    expect(await statementRow.locator("[role=cell]").allTextContents()).toEqual(expect.arrayContaining(["OK", "PG"]));
    const failed = rowFor("SELECT * FROM missing_table");
    await failed.waitFor();
    expect(await failed.locator("[role=cell]").allTextContents()).toEqual(expect.arrayContaining(["42P01", "PG"]));
    await rowFor("GET order:1").waitFor();

    await rowFor("/slow").click();
    const detail = frame().locator.getByRole("region", { name: "Request detail" });
    const calls = detail.getByRole("list", { name: "Outbound calls" });
    await calls.waitFor();
    expect(await stepsOf(calls)).toEqual([
      "Redis OK INCRBY slow-calls 1",
      "PG OK BEGIN",
      "PG OK culpritSELECT pg_sleep(0.3)",
      "PG OK COMMIT",
      "own time",
    ]);
    expect(await calls.locator("[data-culprit]").count()).toBe(1);
    await screenshot(page, "db-calls-1440-waterfall");

    await calls.getByRole("button").filter({ hasText: "SELECT pg_sleep(0.3)" }).click();
    await detail.getByTestId("statement").filter({ hasText: "SELECT pg_sleep(0.3)" }).waitFor();
    expect(await detail.getByTestId("detail-url").textContent()).toBe("SELECT pg_sleep(0.3)");
    expect(await detail.getByText("Made while serving").count()).toBe(1);
    expect(await detail.getByRole("table", { name: "Call" }).textContent()).toContain("databaseshop");
    await screenshot(page, "db-calls-1440-statement");
    expect(await scrollsSideways(frame().frame())).toBe(false);
  }, 60_000);

  test("390 px: the same waterfall in the full-screen detail, nothing off the side", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(service.linkUrl);
    await rowFor("/orders/1").click();
    const detail = frame().locator.getByRole("region", { name: "Request detail" });
    const calls = detail.getByRole("list", { name: "Outbound calls" });
    await calls.waitFor();
    // The request did little besides its calls; whichever step was slowest on this machine is the one flagged.
    expect((await stepsOf(calls)).map((s) => s.replace("culprit", ""))).toEqual([
      "Redis OK GET order:1",
      "PG OK BEGIN",
      "PG OK SELECT id, item FROM orders WHERE id = 1",
      "PG OK COMMIT",
      "MySQL OK SELECT count FROM stock WHERE item = 'book'",
      "Redis OK SET order:1 book EX 60",
      "own time",
    ]);
    // One culprit for the whole request: its processing is broken down into the calls, so it is flagged among them.
    expect(await detail.locator("[data-culprit]").count()).toBe(1);
    const box = (await calls.boundingBox())!;
    expect(box.width).toBeLessThanOrEqual(PHONE.width);
    expect(await scrollsSideways(frame().frame())).toBe(false);
    await screenshot(page, "db-calls-390-waterfall");
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
