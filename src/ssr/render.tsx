import { randomBytes } from "node:crypto";
import { renderToReadableStream } from "react-dom/server";
import {
  createStaticHandler,
  createStaticRouter,
  isRouteErrorResponse,
  type RouteObject,
  type StaticHandler,
  type StaticHandlerContext,
  StaticRouterProvider,
} from "react-router";
import { log } from "~/lib/server/logger.ts";
import type { AreaAssets } from "~/ssr/assets.ts";
import { jsonForScript } from "~/ssr/html.ts";
import type { PageEnv } from "~/ui/env.ts";
import { routes as appRoutes, type RouteHandle } from "~/ui/routes.tsx";
import { type PageShell, SHELL_GLOBAL, ShellProvider, VERSION_GLOBAL } from "~/ui/shell.tsx";

/** Past this, whatever has not streamed yet is left to the browser to render. */
export const RENDER_TIMEOUT_MS = 10_000;

/** `areaAssets`: the manifest's scripts per area of the site; the page preloads its own area's. */
type RenderInput = { request: Request; env: PageEnv; shell: PageShell; areaAssets?: AreaAssets };
export type RenderPage = (input: RenderInput) => Promise<Response>;

/**
 * Server render of one page request: run the matching loaders (redirects come back as they are),
 * then stream the React document with the hydration data for the browser router.
 */
export function createPageRenderer(routes: RouteObject[] = appRoutes): RenderPage {
  const handler = createStaticHandler(routes);
  return (input) => render(handler, input);
}

async function render(handler: StaticHandler, { request, env, shell: baseShell, areaAssets }: RenderInput): Promise<Response> {
  const context = await handler.query(request, { requestContext: env as never });
  if (context instanceof Response) return context;
  const shell = withAreaPreloads(baseShell, context, areaAssets);

  const nonce = randomBytes(16).toString("base64");
  const headers = new Headers({
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": contentSecurityPolicy(nonce, new URL(request.url).host),
    "x-content-type-options": "nosniff",
    "referrer-policy": "strict-origin-when-cross-origin",
  });
  try {
    const body = await stream(handler, context, shell, request, nonce);
    return new Response(body, { status: context.statusCode, headers });
  } catch (err) {
    // A render error outside any Suspense boundary: show the app-wide error screen instead, without server internals.
    log.error("page render failed", { path: new URL(request.url).pathname, err });
    const shown = new Error(err instanceof Error ? err.message : "render failed");
    shown.name = err instanceof Error ? err.name : "Error";
    shown.stack = "";
    const errorContext: StaticHandlerContext = { ...context, statusCode: 500, errors: { root: shown }, loaderData: {} };
    const body = await stream(handler, errorContext, shell, request, nonce);
    return new Response(body, { status: 500, headers });
  }
}

async function stream(
  handler: StaticHandler,
  context: StaticHandlerContext,
  shell: PageShell,
  request: Request,
  nonce: string,
): Promise<ReadableStream> {
  const router = createStaticRouter(handler.dataRoutes, context);
  const hydration = { loaderData: context.loaderData, actionData: context.actionData, errors: serializeErrors(context.errors) };
  return renderToReadableStream(
    <ShellProvider shell={shell}>
      <StaticRouterProvider router={router} context={context} hydrate={false} nonce={nonce} />
    </ShellProvider>,
    {
      signal: AbortSignal.any([request.signal, AbortSignal.timeout(RENDER_TIMEOUT_MS)]),
      nonce,
      // The shell, the build info on a window-level version object, and the router's data.
      bootstrapScriptContent: `window.${SHELL_GLOBAL}=${jsonForScript(shell)};window.${VERSION_GLOBAL}=${jsonForScript({ commitHash: shell.config.commitHash })};window.__staticRouterHydrationData=${jsonForScript(hydration)};`,
      bootstrapModules: shell.assets.js ? [shell.assets.js] : undefined,
      onError(error) {
        if (!request.signal.aborted) log.error("page stream error", { path: new URL(request.url).pathname, err: error });
      },
    },
  );
}

/** The shell with the scripts of the areas the page's routes are in (none for an error page outside them). */
function withAreaPreloads(shell: PageShell, context: StaticHandlerContext, areaAssets: AreaAssets = {}): PageShell {
  const preload = new Set(shell.assets.preload);
  for (const match of context.matches) {
    const area = (match.route.handle as RouteHandle | undefined)?.area;
    for (const href of (area && areaAssets[area]) || []) preload.add(href);
  }
  return { ...shell, assets: { ...shell.assets, preload: [...preload] } };
}

/**
 * Scripts only from our origin or carrying this response's nonce: captured data is rendered as text, and
 * should anything slip through as markup, it still cannot run. Frames only from our origin (/iframer).
 */
export function contentSecurityPolicy(nonce: string, host: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    // Older Safari does not count same-host WebSockets as 'self'.
    `connect-src 'self' ws://${host} wss://${host}`,
    "frame-src 'self'",
    "frame-ancestors 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join("; ");
}

/** The same encoding react-router's StaticRouterProvider uses, so the browser router revives the errors. */
function serializeErrors(errors: StaticHandlerContext["errors"]): Record<string, unknown> | null {
  if (!errors) return null;
  const out: Record<string, unknown> = {};
  for (const [routeId, value] of Object.entries(errors)) {
    if (isRouteErrorResponse(value)) out[routeId] = { ...value, __type: "RouteErrorResponse" };
    else if (value instanceof Error)
      out[routeId] = { message: value.message, __type: "Error", ...(value.name !== "Error" ? { __subType: value.name } : {}) };
    else out[routeId] = value;
  }
  return out;
}
