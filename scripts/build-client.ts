#!/usr/bin/env bun
/**
 * Builds the browser assets into build/client: the hydrating React bundle (minified, content-hashed, split into the
 * entry, one chunk per area of the site and the chunks they share) and the Tailwind stylesheet (hashed), each with
 * brotli and gzip copies, plus manifest.json that the server reads to link them.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import type { DocsManifest } from "../src/lib/docs.ts";
import type { ContentManifest } from "../src/lib/site-content.ts";
import type { Area } from "../src/ui/routes.tsx";
import { renderContent } from "./docs/render-content.ts";
import { renderDocs } from "./docs/render-docs.ts";

const root = resolve(import.meta.dir, "..");
/** Below this a compressed copy saves less than a round trip's worth and costs the server a lookup. */
const MIN_COMPRESS_BYTES = 1024;
const outDir = resolve(process.env.CLIENT_OUT_DIR ?? join(root, "build/client"));
const started = performance.now();

mkdirSync(outDir, { recursive: true });

/** Each area's module (src/ui/routes.tsx imports it lazily) is an entry point too, so its chunk is named for it. */
const areaModules: Record<Area, string> = {
  site: "src/ui/pages/site-area.ts",
  dashboard: "src/ui/pages/dashboard-area.ts",
  frames: "src/ui/pages/frames-area.ts",
};
const result = await Bun.build({
  entrypoints: ["src/ui/entry-client.tsx", ...Object.values(areaModules)].map((path) => join(root, path)),
  outdir: outDir,
  target: "browser",
  format: "esm",
  splitting: true,
  minify: true,
  sourcemap: "none",
  naming: { entry: "[name]-[hash].[ext]", chunk: "chunk-[hash].[ext]", asset: "[name]-[hash].[ext]" },
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  metafile: true,
});
if (!result.success) {
  for (const message of result.logs) console.error(message);
  process.exit(1);
}
const { entry, areas } = chunkGraph(result.metafile as unknown as Metafile | string | undefined);

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
  customers: content.customers.length > 0 ? hashedJson("customers", content.customers) : null,
  changelog: hashedJson("changelog", content.changelog),
};

const files = [
  ...result.outputs.map((output) => basename(output.path)),
  cssName,
  docsManifest.index,
  ...Object.values(docsManifest.pages),
  ...(contentManifest.customers ? [contentManifest.customers] : []),
  contentManifest.changelog,
];
// Precompressed copies, at the slowest and smallest settings since it is done once: the server sends the one the
// browser accepts. A copy that would save little is not written (the server then sends the file as it is).
const compressed: string[] = [];
for (const name of files) {
  const raw = readFileSync(join(outDir, name));
  if (raw.length < MIN_COMPRESS_BYTES) continue;
  const copies = {
    br: brotliCompressSync(raw, {
      params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length },
    }),
    gz: gzipSync(raw, { level: 9 }),
  };
  for (const [extension, bytes] of Object.entries(copies)) {
    if (bytes.length > raw.length * 0.9) continue;
    writeFileSync(join(outDir, `${name}.${extension}`), bytes);
    compressed.push(`${name}.${extension}`);
  }
}
const manifest = {
  entry: `/assets/${entry}`,
  css: [`/assets/${cssName}`],
  areas: Object.fromEntries(Object.entries(areas).map(([area, chunks]) => [area, chunks.map((name) => `/assets/${name}`)])),
  files,
  compressed,
  docs: docsManifest,
  content: contentManifest,
};
const manifestTmp = join(outDir, `manifest.${process.pid}.tmp`);
writeFileSync(manifestTmp, `${JSON.stringify(manifest, null, 2)}\n`);
renameSync(manifestTmp, join(outDir, "manifest.json"));

// Old hashed files go once they are stale: a server started from an earlier build may still link them for a while.
const keep = new Set([...files, ...compressed, "manifest.json"]);
for (const name of readdirSync(outDir)) {
  const path = join(outDir, name);
  if (!keep.has(name) && Date.now() - statSync(path).mtimeMs > 10 * 60_000) rmSync(path, { force: true });
}

type Metafile = { outputs: Record<string, { entryPoint?: string; imports: Array<{ path: string; kind: string }> }> };

/**
 * The entry's file and, for each area, the files a page of it loads besides the entry: the area's chunk first, then
 * every chunk it or the entry imports statically (what the page's `modulepreload` links name).
 */
function chunkGraph(metafile: Metafile | string | undefined): { entry: string; areas: Record<Area, string[]> } {
  if (!metafile) throw new Error("the build wrote no metafile");
  const { outputs } = typeof metafile === "string" ? (JSON.parse(metafile) as Metafile) : metafile;
  const outputOf = (module: string) => {
    const found = Object.entries(outputs).find(([, output]) => output.entryPoint === module);
    if (!found) throw new Error(`no chunk for ${module} in the build output`);
    return basename(found[0]);
  };
  const staticImports = (from: string, seen: Set<string>) => {
    if (seen.has(from)) return seen;
    seen.add(from);
    for (const imported of outputs[`./${from}`]?.imports ?? [])
      if (imported.kind === "import-statement") staticImports(basename(imported.path), seen);
    return seen;
  };
  const entry = outputOf("src/ui/entry-client.tsx");
  const areas = Object.fromEntries(
    Object.entries(areaModules).map(([area, module]) => {
      const chunks = staticImports(outputOf(module), new Set());
      for (const chunk of staticImports(entry, new Set())) chunks.add(chunk);
      chunks.delete(entry);
      return [area, [...chunks]];
    }),
  ) as Record<Area, string[]>;
  return { entry, areas };
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
