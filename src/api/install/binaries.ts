import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { embedded, sourceRoot } from "~/lib/embedded.ts";

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
