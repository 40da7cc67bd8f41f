#!/usr/bin/env bun
/**
 * `npm run bench:site`: Lighthouse (npm `lighthouse`, Debian `chromium`) on the public pages of a production build:
 * the client is built, `tapscope server` starts on a scratch data directory, and each page is audited (Lighthouse's
 * default mobile profile with simulated throttling) for performance, accessibility and best practices. Prints the
 * scores against the targets of issue 17 (90 / 95 / 95) and exits non-zero when one is missed.
 *
 * Options: --pages "/,/pricing" (default: /, /pricing, /blog/http2-preface, /docs), --runs N (median of N, default 1),
 * --smoke (the landing page once, scores printed but not judged: proves it runs).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { median, waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const pages = option("pages", "/,/pricing,/blog/http2-preface,/docs", "/").split(",");
const runs = Number(option("runs", "1"));
const chrome = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => Bun.file(path).size > 0);
if (!chrome) {
  console.error("bench:site needs Chromium (Debian: apt-get install chromium)");
  process.exit(1);
}
const targets = { performance: 0.9, accessibility: 0.95, "best-practices": 0.95 } as const;
type Category = keyof typeof targets;

const built = spawnSync(process.execPath, [join(root, "scripts/build-client.ts")], { stdio: "inherit" });
if (built.status !== 0) process.exit(1);

const dataDir = mkdtempSync(join(tmpdir(), "tapscope-bench-site-"));
const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
const port = probe.port;
probe.stop(true);
const server = spawn(process.execPath, [join(root, "src/main.ts"), "server"], {
  env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "production" },
  stdio: "ignore",
});
const scores = new Map<string, Record<Category, number[]>>();
let missed = 0;
try {
  await waitForPort(port, 30_000);
  for (let run = 0; run < runs; run++) {
    for (const page of pages) {
      const lighthouse = spawnSync(
        join(root, "node_modules/.bin/lighthouse"),
        [
          `http://127.0.0.1:${port}${page}`,
          "--quiet",
          "--output=json",
          "--output-path=stdout",
          "--only-categories=performance,accessibility,best-practices",
          "--chrome-flags=--headless=new --no-sandbox --disable-gpu",
        ],
        { encoding: "utf8", env: { ...process.env, CHROME_PATH: chrome }, maxBuffer: 64 * 1024 * 1024 },
      );
      if (lighthouse.status !== 0) throw new Error(`lighthouse failed on ${page}: ${lighthouse.stderr.slice(-2000)}`);
      const report = JSON.parse(lighthouse.stdout) as {
        categories: Record<Category, { score: number }>;
        audits: Record<
          string,
          { score: number | null; title: string; scoreDisplayMode: string; details?: { items?: Array<{ node?: { snippet?: string } }> } }
        >;
      };
      const entry = scores.get(page) ?? { performance: [], accessibility: [], "best-practices": [] };
      for (const category of Object.keys(targets) as Category[]) entry[category].push(report.categories[category].score);
      scores.set(page, entry);
      const failing = Object.values(report.audits)
        .filter((a) => a.score !== null && a.score < 0.9 && a.scoreDisplayMode !== "informative" && a.scoreDisplayMode !== "notApplicable")
        .map((a) => a.title);
      process.stderr.write(`${page}: ${failing.length ? `below 0.9: ${failing.slice(0, 8).join("; ")}` : "no failing audits"}\n`);
      // Where an accessibility audit fails, the elements it names: what to fix.
      for (const id of ["color-contrast", "link-name", "button-name", "image-alt", "label", "heading-order", "target-size"]) {
        const audit = report.audits[id];
        if (audit?.score === 0)
          for (const item of audit.details?.items?.slice(0, 5) ?? []) process.stderr.write(`  ${id}: ${item.node?.snippet ?? "?"}\n`);
      }
    }
  }
} finally {
  server.kill("SIGTERM");
  rmSync(dataDir, { recursive: true, force: true });
}

console.log(
  `\nLighthouse ${runs > 1 ? `(median of ${runs})` : ""} on a production build, mobile profile, ${navigator.hardwareConcurrency} CPUs`,
);
console.log("page                     performance  accessibility  best-practices");
for (const [page, entry] of scores) {
  const cell = (category: Category) => {
    const score = Math.round(median(entry[category]) * 100);
    if (score < targets[category] * 100) missed++;
    return `${score}${score < targets[category] * 100 ? " (below)" : ""}`.padStart(category === "performance" ? 11 : 13);
  };
  console.log(`${page.padEnd(24)} ${cell("performance")}  ${cell("accessibility")}  ${cell("best-practices").padStart(14)}`);
}
console.log(`targets: performance >= 90, accessibility >= 95, best practices >= 95: ${missed === 0 ? "all met" : `${missed} missed`}`);
// A smoke run on a busy machine proves the audit runs; its scores decide nothing.
process.exit(missed === 0 || isSmoke ? 0 : 1);
