import { existsSync, readFileSync } from "node:fs";
import { join, normalize, resolve, sep } from "node:path";

/** What scripts/build-client.ts writes next to the assets. */
export type ClientManifest = { entry: string; css: string[]; files: string[] };

/**
 * Where built client assets come from. The only lookup the server does, so the single binary can swap
 * the directory for embedded files.
 */
export type AssetSource = {
  manifest: () => ClientManifest | null;
  /** `name` is the path below /assets/ (e.g. "entry-3f2a.js"); null when there is no such asset. */
  get: (name: string) => Blob | null;
};

export const DEFAULT_CLIENT_DIR = resolve(import.meta.dir, "../../build/client");

/** Assets from a directory: build/client by default. The manifest is read once and cached. */
export function directoryAssetSource(dir: string = DEFAULT_CLIENT_DIR): AssetSource {
  const root = resolve(dir);
  let cached: ClientManifest | null | undefined;
  return {
    manifest() {
      if (cached !== undefined) return cached;
      const path = join(root, "manifest.json");
      cached = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as ClientManifest) : null;
      return cached;
    },
    get(name) {
      const full = normalize(join(root, name));
      if (!full.startsWith(root + sep)) return null;
      return existsSync(full) ? Bun.file(full) : null;
    },
  };
}

/** Assets from an in-memory map (embedded files of the compiled binary, or tests). */
export function mapAssetSource(files: Map<string, Blob>, manifest: ClientManifest | null): AssetSource {
  return { manifest: () => manifest, get: (name) => files.get(name) ?? null };
}

const contentTypes: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  map: "application/json; charset=utf-8",
  json: "application/json; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
};

export function contentTypeOf(name: string): string {
  return contentTypes[name.split(".").pop() ?? ""] ?? "application/octet-stream";
}
