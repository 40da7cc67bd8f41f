import { join } from "node:path";
import type { Page } from "playwright-core";
import { launchBrowser, root, screenshot, startServer } from "../../tests/e2e/harness.ts";
import { startSmtpServer } from "../../tests/support/smtp.ts";

/**
 * bench:explorer — the requests explorer in Chromium over the real query tunnel, with N events (default
 * 1,000,000) spread over 24 hours in one namespace, ingested through the real publisher (JoinPublisher +
 * WebSocket -> validation -> DuckDB). Measured in the page: from the brush's release (the click) to the
 * updated histogram and the first page of rows painted. Baselines side by side: clearing the focus (the same
 * rows query over the whole 24 h, no brush) and a plain page load.
 *   bun bench/explorer/run.ts [--rows 1000000] [--runs 10]
 */
const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? String(args[i + 1]) : fallback;
};
const rows = Number(arg("rows", "1000000"));
const runs = Number(arg("runs", "10"));
const bun = join(root, "node_modules/.bin/bun");
const H = 3_600_000;
const endMs = Math.ceil(Date.now() / H) * H;
const global = { lowerMs: endMs - 24 * H, upperMs: endMs };

const smtp = await startSmtpServer();
const server = await startServer({ SMTP_URL: smtp.url, LOG_LEVEL: "warn" });
const browser = await launchBrowser();
const page = await browser.context.newPage();
page.setDefaultTimeout(120_000);

async function signIn(p: Page): Promise<{ token: string; path: string }> {
  await p.goto(`${server.baseUrl}/login`);
  await p.waitForFunction(() => (window as unknown as { __reactRouterVersion?: string }).__reactRouterVersion !== undefined);
  await p.getByPlaceholder("Enter your email...").fill("bench@example.test");
  await p.getByRole("button", { name: "Sign in" }).click();
  const mail = await smtp.waitFor("bench@example.test");
  const link = /https?:\/\/[^\s"'<>]+\/api\/EmailLoginCallback\?[^\s"'<>]+/.exec(mail.text)?.[0];
  await p.goto(String(link).replaceAll("&amp;", "&"));
  await p.waitForURL(/\/dashboard\/[^/]+\/live$/);
  const token = await p.evaluate(async () => {
    const post = async (name: string, body: unknown) =>
      (await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
    const { orgs } = await post("ListOrgs", {});
    const { namespaces } = await post("ListNamespaces", { orgId: orgs[0].orgId });
    return (await post("GenerateNamespaceToken", { namespaceId: namespaces[0].namespaceId })).token as string;
  });
  return { token, path: new URL(p.url()).pathname.replace(/\/live$/, "/requests") };
}

const { token, path } = await signIn(page);
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
const stats = JSON.parse(await new Response(child.stdout).text());
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

/** Waits in the page for the results to settle after an action; returns ms from `since` (page clock) to the next paint. */
const settleScript = () =>
  page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const results = document.querySelector("[data-testid=results]");
        const before = document.querySelector("[data-testid=result-count]")?.textContent;
        const check = () => {
          const text = results?.textContent ?? "";
          const count = document.querySelector("[data-testid=result-count]")?.textContent;
          if (!text.includes("Loading…") && count !== before && document.querySelector("[role=row][data-event-id]")) {
            obs.disconnect();
            requestAnimationFrame(() => resolve(performance.now()));
          }
        };
        const obs = new MutationObserver(check);
        obs.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
      }),
  );

const lastBrush = () => page.evaluate(() => Number(document.querySelector("[data-last-brush]")?.getAttribute("data-last-brush")));

async function brush(fromShare: number, toShare: number): Promise<number> {
  const box = (await page.getByTestId("histogram").boundingBox())!;
  const done = settleScript();
  await page.mouse.move(box.x + box.width * fromShare, box.y + box.height * 0.4);
  await page.mouse.down();
  if (toShare !== fromShare) await page.mouse.move(box.x + box.width * toShare, box.y + box.height * 0.4, { steps: 4 });
  await page.mouse.up();
  const paintedAt = await done;
  return paintedAt - (await lastBrush());
}

async function clearFocus(): Promise<number> {
  const done = settleScript();
  const clickedAt = await page.evaluate(() => {
    const t = performance.now();
    (Array.from(document.querySelectorAll("button")).find((b) => b.textContent === "Clear focus") as HTMLButtonElement).click();
    return t;
  });
  return (await done) - clickedAt;
}

async function pageLoad(): Promise<number> {
  await page.goto("about:blank");
  const t = Date.now();
  await page.goto(url);
  await page.waitForFunction(
    () =>
      !!document.querySelector("[role=row][data-event-id]") &&
      !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading…"),
  );
  return Date.now() - t;
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)] ?? Number.NaN, p90: s[Math.min(s.length - 1, Math.floor(s.length * 0.9))] ?? Number.NaN };
};

// 24 h in 30 min buckets: the grid spans 60 h, the data the first 40% of the width.
const cases: { name: string; prepare: () => Promise<unknown>; run: () => Promise<number> }[] = [
  { name: "brush click (one 30 min bucket)", prepare: clearFocus, run: () => brush(0.2, 0.2) },
  { name: "brush drag (about 2 h)", prepare: clearFocus, run: () => brush(0.1, 0.13) },
  { name: "brush drag (about 12 h, over the row limit)", prepare: clearFocus, run: () => brush(0.05, 0.25) },
  { name: "baseline: clear focus (same query, no brush, 24 h)", prepare: () => brush(0.2, 0.2), run: clearFocus },
  { name: "baseline: plain page load (24 h, no brush)", prepare: async () => {}, run: pageLoad },
];

const results: { name: string; median: number; p90: number }[] = [];
for (const c of cases) {
  await page.goto(url);
  await page.getByTestId("result-count").waitFor();
  await brush(0.3, 0.32);
  const xs: number[] = [];
  for (let i = 0; i <= runs; i++) {
    await c.prepare();
    const ms = await c.run();
    if (i > 0) xs.push(ms); // the first is a warm-up
  }
  results.push({ name: c.name, ...stat(xs) });
  console.log(`${c.name}: median ${stat(xs).median.toFixed(0)} ms, p90 ${stat(xs).p90.toFixed(0)} ms`);
}
await brush(0.1, 0.13);
await screenshot(page, "bench-explorer-brushed");

console.log("\n| case | median (ms) | p90 (ms) |\n|---|---|---|");
for (const r of results) console.log(`| ${r.name} | ${r.median.toFixed(0)} | ${r.p90.toFixed(0)} |`);
console.log(
  `\nrows ${stats.sent}, runs ${runs}, load average ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`,
);

await browser.close();
await server.stop();
await smtp.close();
process.exit(0);
