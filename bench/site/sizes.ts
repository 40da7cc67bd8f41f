#!/usr/bin/env bun
/**
 * `npm run bench:bundle`: what a browser is sent for the site's pages. Builds the client, starts `tapscope server` on a
 * scratch data directory (production mode) and, for each page, fetches its HTML as Chromium asks for it
 * (`Accept-Encoding: gzip, deflate, br, zstd`), then every script and stylesheet the page names (its module script,
 * modulepreload and stylesheet links) and every script those import statically. Prints, per file, its raw size and
 * its size at gzip -9 and brotli 11 next to the bytes the server actually sent, and, per page, the totals.
 *
 * Options: --pages "/,/docs" (default: / the landing page, /docs, /minified a page of the dashboard's area, /iframer the
 * live frame), --baseline <checkout> (the same measured on another checkout of the repository, built and served from
 * there, side by side: e.g. `git archive <commit> | tar -x -C /tmp/before` with node_modules linked in), --smoke (the
 * landing page only). Also prints what compressing the first page's HTML costs per response at each setting.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from "node:zlib";
import { waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const pages = option("pages", "/,/docs,/minified,/iframer", "/").split(",");
const baseline = option("baseline", "");
const CHROMIUM_ACCEPT_ENCODING = "gzip, deflate, br, zstd";

type Sizes = { raw: number; gzip: number; brotli: number; served: number; encoding: string };
type PageSizes = { html: Sizes; scripts: string[]; styles: string[]; htmlBytes: Uint8Array };
type Measured = { files: Map<string, Sizes>; pages: Map<string, PageSizes> };

function sizesOf(raw: Uint8Array, served: number, encoding: string): Sizes {
  return {
    raw: raw.length,
    gzip: gzipSync(raw, { level: 9 }).length,
    brotli: brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    served,
    encoding,
  };
}

/** The body as sent (`served` bytes) and decoded. */
async function fetchSent(url: string): Promise<{ raw: Uint8Array; served: number; encoding: string }> {
  const res = await fetch(url, { headers: { "accept-encoding": CHROMIUM_ACCEPT_ENCODING }, decompress: false });
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  const sent = new Uint8Array(await res.arrayBuffer());
  const encoding = res.headers.get("content-encoding") ?? "none";
  const raw = encoding === "br" ? brotliDecompressSync(sent) : encoding === "gzip" ? gunzipSync(sent) : sent;
  return { raw: new Uint8Array(raw), served: sent.length, encoding };
}

const attribute = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]+)"`).exec(tag)?.[1];

/** Builds the client of `checkout`, serves it, and measures `pages`. */
async function measure(checkout: string): Promise<Measured> {
  const built = spawnSync(process.execPath, [join(checkout, "scripts/build-client.ts")], {
    cwd: checkout,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (built.status !== 0) throw new Error(`client build failed in ${checkout}`);
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-bench-bundle-"));
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const server = spawn(process.execPath, [join(checkout, "src/main.ts"), "server"], {
    cwd: checkout,
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "production" },
    stdio: "ignore",
  });
  const base = `http://127.0.0.1:${port}`;
  const measured: Measured = { files: new Map(), pages: new Map() };
  const file = async (path: string) => {
    if (!measured.files.has(path)) {
      const sent = await fetchSent(`${base}${path}`);
      measured.files.set(path, sizesOf(sent.raw, sent.served, sent.encoding));
      return sent.raw;
    }
    return null;
  };
  try {
    await waitForPort(port, 60_000);
    for (const page of pages) {
      const sent = await fetchSent(`${base}${page}`);
      const html = new TextDecoder().decode(sent.raw);
      const tags = [...html.matchAll(/<(?:script|link)\b[^>]*>/g)].map((m) => m[0]);
      const styles = tags.filter((tag) => tag.includes('rel="stylesheet"')).map((tag) => attribute(tag, "href")!);
      const queue = tags
        .filter((tag) => tag.startsWith("<script") || tag.includes('rel="modulepreload"'))
        .map((tag) => attribute(tag, "src") ?? attribute(tag, "href"))
        .filter((url): url is string => url?.startsWith("/assets/") ?? false);
      const scripts = new Set<string>();
      while (queue.length > 0) {
        const script = queue.shift()!;
        if (scripts.has(script)) continue;
        scripts.add(script);
        const raw = (await file(script)) ?? (await (await fetch(`${base}${script}`)).bytes());
        // Static imports only (`import{a}from"./chunk-x.js"`, `import"./chunk-x.js"`); `import("...")` loads later, if at all.
        for (const m of new TextDecoder().decode(raw).matchAll(/(?:\bfrom|\bimport)\s*"\.\/([^"]+\.js)"/g)) queue.push(`/assets/${m[1]}`);
      }
      for (const style of styles) await file(style);
      measured.pages.set(page, { html: sizesOf(sent.raw, sent.served, sent.encoding), scripts: [...scripts], styles, htmlBytes: sent.raw });
    }
  } finally {
    server.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  }
  return measured;
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const sum = (measured: Measured, paths: string[], key: keyof Omit<Sizes, "encoding">) =>
  paths.reduce((total, path) => total + (measured.files.get(path)?.[key] ?? 0), 0);

function print(label: string, measured: Measured): void {
  console.log(`\n${label}`);
  console.log(`${"file".padEnd(34)} ${"raw KiB".padStart(9)} ${"gzip KiB".padStart(9)} ${"brotli KiB".padStart(11)}  served KiB`);
  for (const [path, s] of [...measured.files].sort((a, b) => b[1].raw - a[1].raw))
    console.log(
      `${path.replace("/assets/", "").padEnd(34)} ${kib(s.raw).padStart(9)} ${kib(s.gzip).padStart(9)} ${kib(s.brotli).padStart(11)}  ${kib(s.served)} (${s.encoding})`,
    );
  console.log(
    `${"page".padEnd(12)} ${"html raw/served".padStart(16)} ${"scripts".padStart(8)} ${"js raw".padStart(8)} ${"js served".padStart(10)} ${"css raw/served".padStart(15)} ${"total raw".padStart(10)} ${"total served".padStart(13)}`,
  );
  for (const [page, p] of measured.pages) {
    const jsRaw = sum(measured, p.scripts, "raw");
    const jsServed = sum(measured, p.scripts, "served");
    const cssRaw = sum(measured, p.styles, "raw");
    const cssServed = sum(measured, p.styles, "served");
    console.log(
      `${page.padEnd(12)} ${`${kib(p.html.raw)} / ${kib(p.html.served)}`.padStart(16)} ${String(p.scripts.length).padStart(8)} ${kib(jsRaw).padStart(8)} ${kib(jsServed).padStart(10)} ${`${kib(cssRaw)} / ${kib(cssServed)}`.padStart(15)} ${kib(p.html.raw + jsRaw + cssRaw).padStart(10)} ${kib(p.html.served + jsServed + cssServed).padStart(13)}`,
    );
  }
}

const served = (measured: Measured, page: string) => {
  const p = measured.pages.get(page);
  return p ? p.html.served + sum(measured, p.scripts, "served") + sum(measured, p.styles, "served") : 0;
};

/** CPU time to compress a page per response at each setting: why pages get brotli 5 and built assets brotli 11. */
function compressionCost(html: Uint8Array): void {
  const rounds = isSmoke ? 3 : 200;
  const settings: Array<[string, () => Uint8Array]> = [
    ["gzip 6", () => gzipSync(html, { level: 6 })],
    ["brotli 5", () => brotliCompressSync(html, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } })],
    ["brotli 11", () => brotliCompressSync(html, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } })],
  ];
  const cells = settings.map(([name, compress]) => {
    let size = 0;
    const started = performance.now();
    for (let i = 0; i < rounds; i++) size = compress().length;
    return `${name} ${((performance.now() - started) / rounds).toFixed(2)} ms -> ${kib(size)} KiB`;
  });
  console.log(`compressing ${pages[0]}'s HTML (${kib(html.length)} KiB) once, mean of ${rounds}: ${cells.join(", ")}`);
}

const now = await measure(root);
const before = baseline ? await measure(resolve(baseline)) : null;
if (before) print(`baseline: ${resolve(baseline)} (KiB = 1024 bytes)`, before);
print(`this checkout: ${root} (KiB = 1024 bytes)`, now);
console.log("");
compressionCost(now.pages.get(pages[0]!)!.htmlBytes);
if (before) {
  console.log("");
  for (const page of pages)
    console.log(
      `${page}: sent ${kib(served(now, page))} KiB, baseline ${kib(served(before, page))} KiB (now/baseline ${(served(now, page) / served(before, page)).toFixed(2)})`,
    );
}
