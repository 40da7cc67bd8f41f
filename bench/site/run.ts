#!/usr/bin/env bun
/**
 * `npm run bench:site`: Lighthouse (npm `lighthouse`, Debian `chromium`) on the public pages of a production build:
 * the client is built, `tapscope server` starts on a scratch data directory, and each page is audited (Lighthouse's
 * default mobile profile with simulated throttling) for performance, accessibility and best practices. Prints the
 * scores against the targets of issue 17 (90 / 95 / 95) and exits non-zero when one is missed, then the simulated paint
 * and blocking times and the bytes sent behind them.
 *
 * Options: --pages "/,/pricing" (default: /, /pricing, /blog/http2-preface, /docs), --runs N (median of N, default 1),
 * --baseline <checkout> (another checkout of the repository built and served beside this one, each page audited on
 * both in turn, so that both see the same machine load; its table is printed first and judges nothing),
 * --smoke (the landing page once, scores printed but not judged: proves it runs).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { median, waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const pages = option("pages", "/,/pricing,/blog/http2-preface,/docs", "/").split(",");
const runs = Number(option("runs", "1"));
const baseline = option("baseline", "");
const chrome = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => Bun.file(path).size > 0);
if (!chrome) {
  console.error("bench:site needs Chromium (Debian: apt-get install chromium)");
  process.exit(1);
}
const targets = { performance: 0.9, accessibility: 0.95, "best-practices": 0.95 } as const;
type Category = keyof typeof targets;
/** The simulated timings behind the performance score, and what the page weighs over the wire (Lighthouse's audits). */
const metricAudits: Record<string, string> = {
  "first-contentful-paint": "FCP ms",
  "largest-contentful-paint": "LCP ms",
  "total-blocking-time": "TBT ms",
  "total-byte-weight": "sent KiB",
};

type Site = {
  label: string;
  checkout: string;
  port: number;
  server: ChildProcess;
  dataDir: string;
  scores: Map<string, Record<Category, number[]>>;
  metrics: Map<string, Record<string, number[]>>;
};

/** Builds `checkout`'s client and starts its server. */
function startSite(label: string, checkout: string): Site {
  const built = spawnSync(process.execPath, [join(checkout, "scripts/build-client.ts")], { cwd: checkout, stdio: "inherit" });
  if (built.status !== 0) process.exit(1);
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-bench-site-"));
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const server = spawn(process.execPath, [join(checkout, "src/main.ts"), "server"], {
    cwd: checkout,
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "production" },
    stdio: "ignore",
  });
  return { label, checkout, port, server, dataDir, scores: new Map(), metrics: new Map() };
}

type Report = {
  categories: Record<Category, { score: number }>;
  audits: Record<
    string,
    {
      score: number | null;
      title: string;
      scoreDisplayMode: string;
      numericValue?: number;
      details?: { items?: Array<{ node?: { snippet?: string } }> };
    }
  >;
};

function audit(site: Site, page: string): void {
  const lighthouse = spawnSync(
    join(root, "node_modules/.bin/lighthouse"),
    [
      `http://127.0.0.1:${site.port}${page}`,
      "--quiet",
      "--output=json",
      "--output-path=stdout",
      "--only-categories=performance,accessibility,best-practices",
      "--chrome-flags=--headless=new --no-sandbox --disable-gpu",
    ],
    { encoding: "utf8", env: { ...process.env, CHROME_PATH: chrome }, maxBuffer: 64 * 1024 * 1024 },
  );
  if (lighthouse.status !== 0) throw new Error(`lighthouse failed on ${page}: ${lighthouse.stderr.slice(-2000)}`);
  const report = JSON.parse(lighthouse.stdout) as Report;
  const entry = site.scores.get(page) ?? { performance: [], accessibility: [], "best-practices": [] };
  for (const category of Object.keys(targets) as Category[]) entry[category].push(report.categories[category].score);
  site.scores.set(page, entry);
  const measured = site.metrics.get(page) ?? Object.fromEntries(Object.keys(metricAudits).map((id) => [id, [] as number[]]));
  for (const id of Object.keys(metricAudits)) measured[id]!.push(report.audits[id]?.numericValue ?? Number.NaN);
  site.metrics.set(page, measured);
  const failing = Object.values(report.audits)
    .filter((a) => a.score !== null && a.score < 0.9 && a.scoreDisplayMode !== "informative" && a.scoreDisplayMode !== "notApplicable")
    .map((a) => a.title);
  process.stderr.write(`${site.label} ${page}: ${failing.length ? `below 0.9: ${failing.slice(0, 8).join("; ")}` : "no failing audits"}\n`);
  // Where an accessibility audit fails, the elements it names: what to fix.
  for (const id of ["color-contrast", "link-name", "button-name", "image-alt", "label", "heading-order", "target-size"]) {
    const failed = report.audits[id];
    if (failed?.score === 0)
      for (const item of failed.details?.items?.slice(0, 5) ?? []) process.stderr.write(`  ${id}: ${item.node?.snippet ?? "?"}\n`);
  }
}

/** Prints `site`'s tables; the number of targets missed. */
function print(site: Site): number {
  let missed = 0;
  console.log(`\n${site.label}: ${site.checkout}`);
  console.log("page                     performance  accessibility  best-practices");
  for (const [page, entry] of site.scores) {
    const cell = (category: Category) => {
      const score = Math.round(median(entry[category]) * 100);
      if (score < targets[category] * 100) missed++;
      return `${score}${score < targets[category] * 100 ? " (below)" : ""}`.padStart(category === "performance" ? 11 : 13);
    };
    console.log(`${page.padEnd(24)} ${cell("performance")}  ${cell("accessibility")}  ${cell("best-practices").padStart(14)}`);
  }
  console.log(
    `\n${"page".padEnd(24)} ${Object.values(metricAudits)
      .map((label) => label.padStart(9))
      .join(" ")}`,
  );
  for (const [page, measured] of site.metrics) {
    const cells = Object.keys(metricAudits).map((id) => {
      const value = median(measured[id]!);
      return (id === "total-byte-weight" ? (value / 1024).toFixed(1) : Math.round(value).toString()).padStart(9);
    });
    console.log(`${page.padEnd(24)} ${cells.join(" ")}`);
  }
  return missed;
}

const sites = [...(baseline ? [startSite("baseline", resolve(baseline))] : []), startSite("this checkout", root)];
let missed = 0;
try {
  for (const site of sites) await waitForPort(site.port, 30_000);
  for (let run = 0; run < runs; run++) for (const page of pages) for (const site of sites) audit(site, page);
} finally {
  for (const site of sites) {
    site.server.kill("SIGTERM");
    rmSync(site.dataDir, { recursive: true, force: true });
  }
}

console.log(
  `\nLighthouse ${runs > 1 ? `(median of ${runs})` : ""} on a production build, mobile profile, ${navigator.hardwareConcurrency} CPUs`,
);
for (const site of sites) {
  const siteMissed = print(site);
  if (site.checkout === root) missed = siteMissed;
}
console.log(`targets: performance >= 90, accessibility >= 95, best practices >= 95: ${missed === 0 ? "all met" : `${missed} missed`}`);
// A smoke run on a busy machine proves the audit runs; its scores decide nothing.
process.exit(missed === 0 || isSmoke ? 0 : 1);
