import { Elysia } from "elysia";
import { apiRoutes } from "~/api/index.ts";
import { errorsPlugin } from "~/api/plugins/errors.ts";
import type { Runtime } from "~/runtime.ts";
import { type PageRouteOptions, pageRoutes } from "~/ssr/page-routes.ts";
import { wsRoutes } from "~/ws/index.ts";

/**
 * Composes the whole server over a runtime (createRuntime): errors -> api -> ws -> assets + SSR. No listen() here,
 * so tests call `app.handle(new Request(...))` or listen on port 0.
 */
export function createApp(runtime: Runtime, options: PageRouteOptions = {}) {
  return new Elysia().use(errorsPlugin).use(apiRoutes(runtime)).use(wsRoutes(runtime)).use(pageRoutes(runtime, options));
}

export type App = ReturnType<typeof createApp>;
