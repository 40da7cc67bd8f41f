import { statSync } from "node:fs";
import { Elysia, t } from "elysia";
import { AppError } from "~/lib/errors.ts";
import type { Config } from "~/lib/server/env.ts";
import { binarySha256, DOWNLOADS, findBinary, isDownloadName } from "./binaries.ts";
import { installScript } from "./script.ts";

/**
 * GET /install.sh (the `curl | sh` installer), GET /download/tapscope-linux-{x64,arm64} (the binaries) and
 * GET /download/tapscope-linux-{x64,arm64}.sha256 (their SHA-256, in `sha256sum` format, checked by the installer).
 */
export function installRoutes(config: Pick<Config, "publicUrl" | "downloadDir">) {
  return new Elysia({ name: "install" })
    .get(
      "/install.sh",
      ({ set }) => {
        set.headers["content-type"] = "text/x-shellscript; charset=utf-8";
        set.headers["cache-control"] = "no-cache";
        return installScript(config.publicUrl);
      },
      { response: { 200: t.String() } },
    )
    .get(
      "/download/:file",
      async ({ params }) => {
        const available = Object.keys(DOWNLOADS).join(", ");
        const isChecksum = params.file.endsWith(".sha256");
        const name = isChecksum ? params.file.slice(0, -".sha256".length) : params.file;
        if (!isDownloadName(name)) {
          throw new AppError("NOT_FOUND", `no download named "${params.file}"; there are: ${available} (and each with .sha256)`);
        }
        const path = findBinary(name, config.downloadDir);
        if (!path) {
          throw new AppError("NOT_FOUND", `${name} is not built on this server: run "npm run build" (it writes dist/${name})`);
        }
        if (isChecksum) {
          return new Response(`${await binarySha256(path)}  ${name}\n`, {
            headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" },
          });
        }
        return new Response(Bun.file(path), {
          headers: {
            "content-type": "application/octet-stream",
            "content-length": String(statSync(path).size),
            "content-disposition": 'attachment; filename="tapscope"',
            "cache-control": "no-cache",
          },
        });
      },
      { params: t.Object({ file: t.String({ maxLength: 64 }) }) },
    );
}
