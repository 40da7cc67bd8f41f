import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { embedded, sourceRoot } from "~/lib/server/embedded.ts";

export const DOWNLOADS = {
  "tapscope-linux-x64": "x64",
  "tapscope-linux-arm64": "arm64",
} as const;

export type DownloadName = keyof typeof DOWNLOADS;

export function isDownloadName(name: string): name is DownloadName {
  return Object.hasOwn(DOWNLOADS, name);
}

/**
 * Where the binary for one download is. An explicit DOWNLOAD_DIR is the only place looked at. Otherwise
 * a compiled server offers itself for its own architecture and looks beside itself for the other one;
 * a server run from source offers what `npm run build` left in dist/.
 */
export function findBinary(name: DownloadName, downloadDir: string | undefined): string | undefined {
  const candidates: string[] = [];
  const manifest = embedded();
  if (downloadDir) candidates.push(join(downloadDir, name));
  else if (manifest) {
    if (manifest.target === `linux-${DOWNLOADS[name]}`) candidates.push(process.execPath);
    candidates.push(join(dirname(process.execPath), name));
  } else candidates.push(join(sourceRoot, "dist", name));
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

const checksums = new Map<string, { stamp: string; digest: Promise<string> }>();

/**
 * SHA-256 (hex) of a download, computed once per file version (path, size, mtime) and cached. Read in chunks
 * with awaits between them, so hashing a 100 MB binary never holds the event loop; concurrent callers share one read.
 */
export function binarySha256(path: string): Promise<string> {
  const stat = statSync(path);
  const stamp = `${stat.size}:${stat.mtimeMs}`;
  const cached = checksums.get(path);
  if (cached?.stamp === stamp) return cached.digest;
  const digest = (async () => {
    const hasher = new Bun.CryptoHasher("sha256");
    const reader = Bun.file(path).stream().getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) hasher.update(chunk.value);
    return hasher.digest("hex");
  })();
  checksums.set(path, { stamp, digest });
  digest.catch(() => {
    if (checksums.get(path)?.digest === digest) checksums.delete(path);
  });
  return digest;
}
