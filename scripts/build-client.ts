#!/usr/bin/env bun
/**
 * Builds the browser assets into build/client: the hydrating React bundle (minified, content-hashed,
 * split) and the Tailwind stylesheet (hashed), plus manifest.json that the server reads to link them.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";

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

const files = [...result.outputs.map((output) => basename(output.path)), cssName];
// Precompressed copies: the server sends them to browsers that accept gzip (about a third of the size).
for (const name of files) {
  writeFileSync(join(outDir, `${name}.gz`), Bun.gzipSync(readFileSync(join(outDir, name)), { level: 9 }));
}
const entry = result.outputs.find((output) => output.kind === "entry-point");
if (!entry) throw new Error("no entry point in the build output");
const manifest = { entry: `/assets/${basename(entry.path)}`, css: [`/assets/${cssName}`], files };
const manifestTmp = join(outDir, `manifest.${process.pid}.tmp`);
writeFileSync(manifestTmp, `${JSON.stringify(manifest, null, 2)}\n`);
renameSync(manifestTmp, join(outDir, "manifest.json"));

// Old hashed files go once they are stale: a server started from an earlier build may still link them for a while.
const keep = new Set([...files, ...files.map((name) => `${name}.gz`), "manifest.json"]);
for (const name of readdirSync(outDir)) {
  const path = join(outDir, name);
  if (!keep.has(name) && Date.now() - statSync(path).mtimeMs > 10 * 60_000) rmSync(path, { force: true });
}

const bytes = result.outputs.reduce((sum, output) => sum + output.size, 0) + css.length;
console.log(
  `client built in ${Math.round(performance.now() - started)} ms: ${files.length} files, ${(bytes / 1024).toFixed(0)} KiB -> ${outDir}`,
);
