import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { type EmbeddedManifest, embeddedManifest } from "./embedded-manifest.ts";

/**
 * The one place that knows whether we run from the compiled `tapscope` binary and where the files
 * it carries are: migrations, PGlite's wasm + data, libduckdb.so, the browser assets. Libraries
 * that insist on a real path get a copy extracted once to ~/.cache/tapscope/<buildId>/.
 */

export const isCompiledBinary: boolean = embeddedManifest !== undefined;

export function embedded(): EmbeddedManifest | undefined {
  return embeddedManifest;
}

/** The project root when running from source (db/, build/, dist/ live there). */
export const sourceRoot = resolve(import.meta.dir, "../../..");

let cacheRoot: string | undefined;

/** ~/.cache/tapscope/<buildId>, created private to this user; falls back to the temp dir without a usable home. */
export function cacheDir(manifest: EmbeddedManifest): string {
  if (cacheRoot) return cacheRoot;
  const uid = process.getuid?.() ?? 0;
  const candidates = [join(homedir(), ".cache", "tapscope"), join(tmpdir(), `tapscope-${uid}`)];
  for (const base of candidates) {
    try {
      mkdirSync(base, { recursive: true, mode: 0o700 });
      const st = lstatSync(base);
      // A shared temp dir could hold a directory planted by someone else: only trust our own.
      if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0) continue;
      const dir = join(base, manifest.buildId);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const now = new Date();
      utimesSync(dir, now, now); // "last used", for pruning by later builds
      pruneStaleCaches(base, manifest.buildId, now.getTime());
      cacheRoot = dir;
      return dir;
    } catch {
      // try the next candidate
    }
  }
  throw new Error("tapscope: no writable cache directory (tried ~/.cache/tapscope and the temp dir)");
}

const STALE_CACHE_MS = 14 * 24 * 3600 * 1000;

/**
 * Each build extracts into its own folder (70 MB with DuckDB); after upgrades the old ones would pile up.
 * Removes the folders of other builds not used for two weeks. Safe for a process still running an old
 * build: its libduckdb.so stays mapped, and migrations are only read at start.
 */
export function pruneStaleCaches(base: string, current: string, nowMs: number, maxAgeMs = STALE_CACHE_MS): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === current || !/^(x64|arm64)-[0-9a-f]{16}$/.test(entry.name)) continue;
    const path = join(base, entry.name);
    try {
      if (nowMs - statSync(path).mtimeMs < maxAgeMs) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(entry.name);
    } catch {
      // another process may be pruning the same folder
    }
  }
  return removed;
}

/**
 * Copies one embedded file to `target` (decompressing a zstd one) unless a copy of the right size is
 * already there; atomic against other processes doing the same.
 */
function extract(embeddedPath: string, target: string, mode = 0o644, zstd?: { size: number }): string {
  const size = zstd ? zstd.size : statSync(embeddedPath).size;
  if (existsSync(target) && statSync(target).size === size) return target;
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  const tmp = `${target}.${process.pid}.tmp`;
  const bytes = zstd ? Bun.zstdDecompressSync(readFileSync(embeddedPath)) : readFileSync(embeddedPath);
  if (bytes.length !== size) throw new Error(`embedded ${target} is damaged (${bytes.length} bytes, expected ${size})`);
  writeFileSync(tmp, bytes, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, target);
  return target;
}

/** The migrations folder for drizzle's migrator: extracted from the binary, or undefined from source. */
export function embeddedMigrationsFolder(): string | undefined {
  const manifest = embeddedManifest;
  if (!manifest) return undefined;
  const folder = join(cacheDir(manifest), "migrations");
  for (const [rel, file] of Object.entries(manifest.migrations)) extract(file, join(folder, rel));
  return folder;
}

export type PgliteAssets = {
  pgliteWasmModule: WebAssembly.Module;
  initdbWasmModule: WebAssembly.Module;
  fsBundle: Blob;
};

let pgliteAssets: Promise<PgliteAssets> | undefined;

/** PGlite's wasm modules and file system bundle from the binary; undefined from source (PGlite finds its own files). */
export function embeddedPgliteAssets(): Promise<PgliteAssets> | undefined {
  const manifest = embeddedManifest;
  if (!manifest) return undefined;
  pgliteAssets ??= (async () => {
    const unzst = async (path: string) => Bun.zstdDecompressSync(await Bun.file(path).bytes());
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
      WebAssembly.compile(await unzst(manifest.pglite.wasmZst)),
      WebAssembly.compile(await unzst(manifest.pglite.initdbZst)),
    ]);
    return { pgliteWasmModule, initdbWasmModule, fsBundle: new Blob([new Uint8Array(await unzst(manifest.pglite.dataZst))]) };
  })();
  return pgliteAssets;
}

let duckdbLibrary: unknown;

/**
 * Makes `@duckdb/node-api` loadable inside the binary. Its `duckdb.node` addon needs libduckdb.so beside
 * it ($ORIGIN), which a binary has no disk location for: extract the embedded copy and dlopen it first,
 * so the already-loaded library satisfies the addon's dependency. Call before the first
 * `import("@duckdb/node-api")`; a no-op from source and on later calls.
 */
export async function loadDuckDbNative(): Promise<void> {
  const manifest = embeddedManifest;
  if (!manifest || duckdbLibrary) return;
  if (!manifest.libduckdb) throw new Error("this tapscope binary was built without DuckDB");
  const path = extract(manifest.libduckdb.zst, join(cacheDir(manifest), "libduckdb.so"), 0o755, manifest.libduckdb);
  const { dlopen, FFIType } = await import("bun:ffi");
  // Kept referenced for the life of the process: closing it would unload DuckDB under the addon.
  duckdbLibrary = dlopen(path, { duckdb_library_version: { args: [], returns: FFIType.cstring } });
}

/**
 * Where a browser asset from build/client is: a path inside the binary, or the file on disk from source.
 * `relPath` is relative to build/client (e.g. "assets/app-1a2b3c.js" or "manifest.json").
 */
export function clientAssetPath(relPath: string): string | undefined {
  const manifest = embeddedManifest;
  if (manifest) return manifest.client[relPath];
  const path = resolve(sourceRoot, "build/client", relPath);
  if (!path.startsWith(`${resolve(sourceRoot, "build/client")}/`)) return undefined;
  return existsSync(path) ? path : undefined;
}
