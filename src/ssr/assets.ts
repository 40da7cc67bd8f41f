import { existsSync, readFileSync } from "node:fs";
import { join, normalize, resolve, sep } from "node:path";
import type { DocsManifest } from "~/lib/docs.ts";
import { embedded, sourceRoot } from "~/lib/server/embedded.ts";
import type { ContentManifest } from "~/lib/site-content.ts";
import type { Area } from "~/ui/routes.tsx";

/** What scripts/build-client.ts writes next to the assets. */
export type ClientManifest = {
  entry: string;
  css: string[];
  /** Per area of the site, the scripts a page of it loads besides the entry (its chunk first). */
  areas?: AreaAssets;
  files: string[];
  /** The precompressed copies (`<file>.br`, `<file>.gz`) of `files`, where they were worth writing. */
  compressed?: string[];
  docs?: DocsManifest;
  content?: ContentManifest;
};

export type AreaAssets = Partial<Record<Area, string[]>>;

/**
 * Where built client assets come from: the only lookup the server does, so a directory (from source)
 * and the files embedded in the compiled binary are interchangeable.
 */
export type AssetSource = {
  manifest: () => ClientManifest | null;
  /** `name` is the path below /assets/ (e.g. "entry-client-3f2a.js"); null when there is no such asset. */
  get: (name: string) => Blob | null;
};

export const DEFAULT_CLIENT_DIR = join(sourceRoot, "build/client");
const MANIFEST = "manifest.json";

/** The compiled binary's embedded build/client when there is one, else the build/client directory. */
export function defaultAssetSource(): AssetSource {
  const client = embedded()?.client;
  if (client && client[MANIFEST]) {
    const files = new Map(Object.entries(client).map(([name, path]) => [name, Bun.file(path) as Blob]));
    const manifest = JSON.parse(readFileSync(client[MANIFEST], "utf8")) as ClientManifest;
    return mapAssetSource(files, manifest);
  }
  return directoryAssetSource(DEFAULT_CLIENT_DIR);
}

/** Assets from a directory. The manifest is read once and cached (asset names are content-hashed). */
export function directoryAssetSource(dir: string): AssetSource {
  const root = resolve(dir);
  let cached: ClientManifest | null | undefined;
  return {
    manifest() {
      if (cached) return cached;
      const path = join(root, MANIFEST);
      // Not cached while missing: a build that finishes after start is picked up.
      cached = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as ClientManifest) : undefined;
      return cached ?? null;
    },
    get(name) {
      if (name === MANIFEST) return null;
      const full = normalize(join(root, name));
      if (!full.startsWith(root + sep)) return null;
      return existsSync(full) ? Bun.file(full) : null;
    },
  };
}

/** Assets from memory (embedded files, tests). */
export function mapAssetSource(files: Map<string, Blob>, manifest: ClientManifest | null): AssetSource {
  return { manifest: () => manifest, get: (name) => (name === MANIFEST ? null : (files.get(name) ?? null)) };
}

const contentTypes: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
};

export function contentTypeOf(name: string): string {
  return contentTypes[name.split(".").pop() ?? ""] ?? "application/octet-stream";
}
