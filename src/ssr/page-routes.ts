import { Elysia } from "elysia";
import { AppError } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import { emptySite } from "~/lib/site-content.ts";
import type { Runtime } from "~/runtime.ts";
import type { PageShell } from "~/ui/shell.tsx";
import { type AssetSource, contentTypeOf, defaultAssetSource } from "./assets.ts";
import { chooseEncoding, compressStream, type Encoding, encodingExtension, encodings } from "./compression.ts";
import { createPageRenderer } from "./render.tsx";
import { createServerEnv } from "./server-env.ts";

export type PageRouteOptions = {
  /** Where built client assets come from: build/client by default; the single binary passes its embedded files. */
  assets?: AssetSource;
};

/** Static assets (hashed, cached immutable, precompressed) and the server-rendered React pages (compressed as they stream). */
export function pageRoutes({ ctx, config }: Pick<Runtime, "ctx" | "config">, options: PageRouteOptions = {}) {
  const assets = options.assets ?? defaultAssetSource();
  const env = createServerEnv(ctx, assets);
  const renderPage = createPageRenderer();
  let hasWarned = false;

  function shell(): PageShell {
    const manifest = assets.manifest();
    if (!manifest && !hasWarned) {
      hasWarned = true;
      log.warn("client assets not built: pages render without styles or scripts (run npm run build:client)");
    }
    return {
      assets: { css: manifest?.css ?? [], js: manifest?.entry ?? null, preload: [] },
      docs: {
        index: manifest?.docs ? `${ASSET_PREFIX}${manifest.docs.index}` : null,
        pages: Object.fromEntries(Object.entries(manifest?.docs?.pages ?? {}).map(([slug, name]) => [slug, `${ASSET_PREFIX}${name}`])),
      },
      site: manifest?.content?.site ?? emptySite,
      content: {
        customers: manifest?.content?.customers ? `${ASSET_PREFIX}${manifest.content.customers}` : null,
        changelog: manifest?.content ? `${ASSET_PREFIX}${manifest.content.changelog}` : null,
      },
      config: {
        hasGoogle: Boolean(config.google),
        hasGithub: Boolean(config.github),
        supportEmail: config.supportEmail,
        commitHash: config.commitHash,
        publicUrl: config.publicUrl,
      },
    };
  }

  // One wildcard handler dispatching on the path: two overlapping wildcards resolve differently across Elysia's routers.
  const handle = async ({ request }: { request: Request }) => {
    const { pathname } = new URL(request.url);
    if (pathname.startsWith("/api/")) throw new AppError("NOT_FOUND", "not found");
    if (pathname.startsWith(ASSET_PREFIX)) return serveAsset(assets, pathname.slice(ASSET_PREFIX.length), request);
    return compressPage(await renderPage({ request, env, shell: shell(), areaAssets: assets.manifest()?.areas }), request);
  };

  return new Elysia({ name: "pages" }).get("/", handle).get("/*", handle);
}

const ASSET_PREFIX = "/assets/";

function serveAsset(assets: AssetSource, encodedName: string, request: Request): Response {
  let name: string;
  try {
    name = decodeURIComponent(encodedName);
  } catch {
    throw new AppError("NOT_FOUND", "no such asset");
  }
  if (!name || Object.values(encodingExtension).some((extension) => name.endsWith(extension)))
    throw new AppError("NOT_FOUND", "no such asset");
  const file = assets.get(name);
  if (!file) throw new AppError("NOT_FOUND", "no such asset");
  const headers: Record<string, string> = {
    "content-type": contentTypeOf(name),
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    vary: "accept-encoding",
  };
  const copies = new Map<Encoding, Blob>();
  for (const encoding of encodings) {
    const copy = assets.get(`${name}${encodingExtension[encoding]}`);
    if (copy) copies.set(encoding, copy);
  }
  const encoding = chooseEncoding(request.headers.get("accept-encoding"), [...copies.keys()]);
  if (encoding) return new Response(copies.get(encoding), { headers: { ...headers, "content-encoding": encoding } });
  return new Response(file, { headers });
}

/** A rendered page's HTML in the encoding the browser prefers; redirects and bodiless answers pass as they are. */
function compressPage(response: Response, request: Request): Response {
  if (!response.body || !response.headers.get("content-type")?.startsWith("text/html")) return response;
  const headers = new Headers(response.headers);
  headers.append("vary", "accept-encoding");
  const encoding = chooseEncoding(request.headers.get("accept-encoding"));
  if (!encoding) return new Response(response.body, { status: response.status, headers });
  headers.set("content-encoding", encoding);
  headers.delete("content-length");
  return new Response(compressStream(response.body, encoding, request.signal), { status: response.status, headers });
}
