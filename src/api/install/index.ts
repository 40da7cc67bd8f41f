import { statSync } from "node:fs";
import { Elysia, t } from "elysia";
import { AppError } from "~/lib/errors.ts";
import type { AppDeps } from "~/server.ts";
import { DOWNLOADS, findBinary, isDownloadName } from "./binaries.ts";
import { installScript } from "./script.ts";

/** GET /install.sh (the `curl | sh` installer) and GET /download/tapscope-linux-{x64,arm64} (the binaries). */
export function installRoutes(deps: AppDeps) {
  return new Elysia({ name: "install" })
    .get(
      "/install.sh",
      ({ set }) => {
        set.headers["content-type"] = "text/x-shellscript; charset=utf-8";
        set.headers["cache-control"] = "no-cache";
        return installScript(deps.config.publicUrl);
      },
      { response: { 200: t.String() } },
    )
    .get(
      "/download/:file",
      ({ params }) => {
        const available = Object.keys(DOWNLOADS).join(", ");
        if (!isDownloadName(params.file)) {
          throw new AppError("NOT_FOUND", `no download named "${params.file}"; there are: ${available}`);
        }
        const path = findBinary(params.file, deps.config.downloadDir);
        if (!path) {
          throw new AppError(
            "NOT_FOUND",
            `${params.file} is not built on this server: run "npm run build" (it writes dist/${params.file})`,
          );
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
