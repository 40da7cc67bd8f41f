import { join } from "node:path";
import { launchBrowser, namespaceTokenOf, root, screenshot, signInByEmail, startServer } from "../../tests/e2e/harness.ts";
import { startSmtpServer } from "../../tests/support/smtp.ts";
import { optionOf } from "../options.ts";

/**
 * bench:explorer — the requests explorer in Chromium over the real query tunnel, with N events (default
 * 1,000,000) spread over 24 hours in one namespace, ingested through the real publisher (JoinPublisher +
 * WebSocket -> validation -> DuckDB). Measured in the page: from the brush's release (the click) to the
 * updated histogram and the first page of rows painted. Baselines side by side: clearing the focus (the same
 * rows query over the whole 24 h, no brush) and a plain page load.
 *   bun bench/explorer/run.ts [--rows 1000000] [--runs 10] [--smoke]
 * --smoke: 2,000 rows, one measured run of each case (proves it runs, measures nothing).
 */
const arg = optionOf(process.argv.slice(2));
const rows = Number(arg("rows", "1000000", "2000"));
const runs = Number(arg("runs", "10", "1"));
const bun = join(root, "node_modules/.bin/bun");
const H = 3_600_000;
const endMs = Math.ceil(Date.now() / H) * H;
const global = { lowerMs: endMs - 24 * H, upperMs: endMs };

const smtp = await startSmtpServer();
const server = await startServer({ SMTP_URL: smtp.url, LOG_LEVEL: "warn" });
const browser = await launchBrowser();
const page = await browser.context.newPage();
page.setDefaultTimeout(120_000);

const path = (await signInByEmail(page, server.baseUrl, smtp, "bench@example.test")).replace(/\/live$/, "/requests");
const token = await namespaceTokenOf(page);
const ingestStart = performance.now();
const child = Bun.spawn(
  [
    bun,
    join(root, "bench/store/publish-child.ts"),
    server.baseUrl,
    token,
    String(rows),
    String(global.lowerMs * 1000),
    String((global.upperMs - 1000) * 1000),
    "11",
  ],
  { cwd: root, stdout: "pipe", stderr: "inherit" },
);
if ((await child.exited) !== 0) throw new Error("publisher failed");
// The child says when it starts publishing, then prints its stats as its last line.
const stats = JSON.parse((await new Response(child.stdout).text()).trim().split("\n").at(-1) ?? "{}");
const ingestSeconds = (performance.now() - ingestStart) / 1000;
console.log(
  `ingested ${stats.sent} events in ${ingestSeconds.toFixed(0)} s (${Math.round(stats.sent / ingestSeconds)}/s), dropped ${stats.dropped}`,
);

const url = `${server.baseUrl}${path}?filter=${encodeURIComponent(Buffer.from(JSON.stringify({ clauses: [], global, focus: null })).toString("base64"))}`;
const total = async () => Number(((await page.getByTestId("histogram-total").textContent()) ?? "").replace(/[^\d]/g, ""));
// The store sink may still be appending the last batches: wait until the histogram sees them all.
for (let i = 0; ; i++) {
  await page.goto(url);
  await page.getByTestId("result-count").waitFor();
  if ((await total()) >= stats.sent || i > 60) break;
  await Bun.sleep(1000);
}
console.log(`histogram total ${await total()}`);

/**
 * Waits in the page for the results to change after an action. Resolves with the page-clock times of the
 * paint after the first page shows (count changed, rows in, no "Loading…") and after the whole list is in.
 */
const settleScript = () =>
  page.evaluate(
    () =>
      new Promise<{ first: number; full: number }>((resolve) => {
        const results = document.querySelector("[data-testid=results]");
        const before = document.querySelector("[data-testid=result-count]")?.textContent;
        let first = 0;
        const check = () => {
          const text = results?.textContent ?? "";
          const count = document.querySelector("[data-testid=result-count]")?.textContent;
          const ready = count !== before && document.querySelector("[role=row][data-event-id]");
          if (!first && ready && !text.includes("Loading…")) {
            first = -1;
            requestAnimationFrame(() => {
              first = performance.now();
              check();
            });
          }
          if (first > 0 && !text.includes("Loading")) {
            obs.disconnect();
            requestAnimationFrame(() => resolve({ first, full: performance.now() }));
          }
        };
        const obs = new MutationObserver(check);
        obs.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
      }),
  );

type Timing = { first: number; full: number };

const lastBrush = () => page.evaluate(() => Number(document.querySelector("[data-last-brush]")?.getAttribute("data-last-brush")));

async function brush(fromShare: number, toShare: number): Promise<Timing> {
  const box = (await page.getByTestId("histogram").boundingBox())!;
  const done = settleScript();
  await page.mouse.move(box.x + box.width * fromShare, box.y + box.height * 0.4);
  await page.mouse.down();
  if (toShare !== fromShare) await page.mouse.move(box.x + box.width * toShare, box.y + box.height * 0.4, { steps: 4 });
  await page.mouse.up();
  const painted = await done;
  const t0 = await lastBrush();
  return { first: painted.first - t0, full: painted.full - t0 };
}

async function clearFocus(): Promise<Timing> {
  const done = settleScript();
  const clickedAt = await page.evaluate(() => {
    const t = performance.now();
    (Array.from(document.querySelectorAll("button")).find((b) => b.textContent === "Clear focus") as HTMLButtonElement).click();
    return t;
  });
  const painted = await done;
  return { first: painted.first - clickedAt, full: painted.full - clickedAt };
}

async function pageLoad(): Promise<Timing> {
  await page.goto("about:blank");
  const t = Date.now();
  await page.goto(url);
  await page.waitForFunction(
    () =>
      !!document.querySelector("[role=row][data-event-id]") &&
      !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading…"),
  );
  const first = Date.now() - t;
  await page.waitForFunction(() => !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading"));
  return { first, full: Date.now() - t };
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)] ?? Number.NaN, p90: s[Math.min(s.length - 1, Math.floor(s.length * 0.9))] ?? Number.NaN };
};

// 24 h in 30 min buckets: the grid spans 60 h, the data the first 40% of the width.
const cases: { name: string; prepare: () => Promise<unknown>; run: () => Promise<Timing> }[] = [
  { name: "brush click (one 30 min bucket)", prepare: clearFocus, run: () => brush(0.2, 0.2) },
  { name: "brush drag (about 2 h)", prepare: clearFocus, run: () => brush(0.1, 0.13) },
  { name: "brush drag (about 12 h, over the row limit)", prepare: clearFocus, run: () => brush(0.05, 0.25) },
  { name: "baseline: clear focus (same query, no brush, 24 h)", prepare: () => brush(0.2, 0.2), run: clearFocus },
  { name: "baseline: plain page load (24 h, no brush)", prepare: async () => {}, run: pageLoad },
];

const results: { name: string; first: ReturnType<typeof stat>; full: ReturnType<typeof stat> }[] = [];
for (const c of cases) {
  await page.goto(url);
  await page.getByTestId("result-count").waitFor();
  await brush(0.3, 0.32);
  const xs: Timing[] = [];
  for (let i = 0; i <= runs; i++) {
    await c.prepare();
    const t = await c.run();
    if (i > 0) xs.push(t); // the first is a warm-up
  }
  const r = { name: c.name, first: stat(xs.map((x) => x.first)), full: stat(xs.map((x) => x.full)) };
  results.push(r);
  console.log(
    `${c.name}: first page median ${r.first.median.toFixed(0)} ms (p90 ${r.first.p90.toFixed(0)}), whole list ${r.full.median.toFixed(0)} ms (p90 ${r.full.p90.toFixed(0)})`,
  );
}
await brush(0.1, 0.13);
await screenshot(page, "bench-explorer-brushed");

console.log("\n| case | first page, median (ms) | p90 | whole list, median (ms) | p90 |\n|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.name} | ${r.first.median.toFixed(0)} | ${r.first.p90.toFixed(0)} | ${r.full.median.toFixed(0)} | ${r.full.p90.toFixed(0)} |`,
  );
}
console.log(
  `\nrows ${stats.sent}, runs ${runs}, load average ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`,
);

await browser.close();
await server.stop();
await smtp.close();
process.exit(0);
