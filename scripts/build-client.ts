#!/usr/bin/env bun
/**
 * Builds the browser assets into build/client: the hydrating React bundle (minified, content-hashed,
 * split) and the Tailwind stylesheet (hashed), plus manifest.json that the server reads to link them.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const outDir = resolve(process.env.CLIENT_OUT_DIR ?? join(root, "build/client"));
const started = performance.now();

rmSync(outDir, { recursive: true, force: true });
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
const entry = result.outputs.find((output) => output.kind === "entry-point");
if (!entry) throw new Error("no entry point in the build output");
const manifest = { entry: `/assets/${basename(entry.path)}`, css: [`/assets/${cssName}`], files };
writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);

const bytes = result.outputs.reduce((sum, output) => sum + output.size, 0) + css.length;
console.log(`client built in ${Math.round(performance.now() - started)} ms: ${files.length} files, ${(bytes / 1024).toFixed(0)} KiB -> ${outDir}`);
