#!/usr/bin/env bun
/**
 * Builds the browser assets into build/client: the hydrating React bundle (minified, content-hashed,
 * split) and the Tailwind stylesheet (hashed), plus manifest.json that the server reads to link them.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { DocsManifest } from "../src/lib/docs.ts";
import type { ContentManifest } from "../src/lib/site-content.ts";
import { renderContent } from "./docs/render-content.ts";
import { renderDocs } from "./docs/render-docs.ts";

const root = resolve(import.meta.dir, "..");
const outDir = resolve(process.env.CLIENT_OUT_DIR ?? join(root, "build/client"));
const started = performance.now();

mkdirSync(outDir, { recursive: true });

const result = await Bun.build({
  entrypoints: [join(root, "src/ui/entry-client.tsx")],
  outdir: outDir,
  target: "browser",
  format: "esm",
  splitting: true,
  minify: true,
  sourcemap: "none",
  naming: { entry: "[name]-[hash].[ext]", chunk: "chunk-[hash].[ext]", asset: "[name]-[hash].[ext]" },
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
});
if (!result.success) {
  for (const message of result.logs) console.error(message);
  process.exit(1);
}

const cssTmp = join(outDir, "app.tmp.css");
const tailwind = Bun.spawnSync(
  [join(root, "node_modules/.bin/tailwindcss"), "-i", join(root, "src/ui/styles/app.css"), "-o", cssTmp, "--minify"],
  { cwd: root, stdout: "pipe", stderr: "pipe" },
);
if (tailwind.exitCode !== 0) {
  console.error(tailwind.stderr.toString());
  process.exit(1);
}
const css = readFileSync(cssTmp);
rmSync(cssTmp);
const cssName = `app-${createHash("sha256").update(css).digest("hex").slice(0, 10)}.css`;
writeFileSync(join(outDir, cssName), css);

// The documentation, rendered here (docs/site/*.md), one content-hashed JSON asset per page plus the sidebar's index.
const docs = renderDocs(join(root, "docs/site"), { usage: cliUsage, root });
const hashedJson = (stem: string, value: unknown) => {
  const bytes = Buffer.from(JSON.stringify(value));
  const name = `${stem}-${createHash("sha256").update(bytes).digest("hex").slice(0, 10)}.json`;
  writeFileSync(join(outDir, name), bytes);
  return name;
};
const docsManifest: DocsManifest = {
  index: hashedJson("docs-index", docs.index),
  pages: Object.fromEntries(docs.pages.map((page) => [page.slug, hashedJson(`docs-${page.slug}`, page)])),
};

// The site's editable content (content/): links and badges inline in the manifest, stories and changelog as assets.
const content = renderContent(join(root, "content"), { usage: cliUsage, root });
const contentManifest: ContentManifest = {
  site: content.site,
  customers: hashedJson("customers", content.customers),
  changelog: hashedJson("changelog", content.changelog),
};

const files = [
  ...result.outputs.map((output) => basename(output.path)),
  cssName,
  docsManifest.index,
  ...Object.values(docsManifest.pages),
  contentManifest.customers,
  contentManifest.changelog,
];
// Precompressed copies: the server sends them to browsers that accept gzip (about a third of the size).
for (const name of files) {
  writeFileSync(join(outDir, `${name}.gz`), Bun.gzipSync(readFileSync(join(outDir, name)), { level: 9 }));
}
const entry = result.outputs.find((output) => output.kind === "entry-point");
if (!entry) throw new Error("no entry point in the build output");
const manifest = {
  entry: `/assets/${basename(entry.path)}`,
  css: [`/assets/${cssName}`],
  files,
  docs: docsManifest,
  content: contentManifest,
};
const manifestTmp = join(outDir, `manifest.${process.pid}.tmp`);
writeFileSync(manifestTmp, `${JSON.stringify(manifest, null, 2)}\n`);
renameSync(manifestTmp, join(outDir, "manifest.json"));

// Old hashed files go once they are stale: a server started from an earlier build may still link them for a while.
const keep = new Set([...files, ...files.map((name) => `${name}.gz`), "manifest.json"]);
for (const name of readdirSync(outDir)) {
  const path = join(outDir, name);
  if (!keep.has(name) && Date.now() - statSync(path).mtimeMs > 10 * 60_000) rmSync(path, { force: true });
}

/** What `tapscope <args>` prints (the CLI reference quotes the CLI's own usage text). */
function cliUsage(args: string[]): string {
  const printed = Bun.spawnSync([process.execPath, join(root, "src/main.ts"), ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const text = printed.stdout.toString();
  if (printed.exitCode !== 0 || !text.trim()) throw new Error(`docs: \`tapscope ${args.join(" ")}\` printed no usage (${printed.stderr})`);
  return text;
}

const bytes = result.outputs.reduce((sum, output) => sum + output.size, 0) + css.length;
console.log(
  `client built in ${Math.round(performance.now() - started)} ms: ${files.length} files, ${(bytes / 1024).toFixed(0)} KiB -> ${outDir}`,
);
