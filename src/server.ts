import { Elysia } from "elysia";
import { apiRoutes } from "~/api/index.ts";
import { errorsPlugin } from "~/api/plugins/errors.ts";
import type { Runtime } from "~/runtime.ts";
import { type PageRouteOptions, pageRoutes } from "~/ssr/page-routes.ts";
import { wsRoutes } from "~/ws/index.ts";
import { SocketServer } from "~/ws/socket-server.ts";

/**
 * Composes the whole server over a runtime (createRuntime): errors -> api -> ws -> assets + SSR. No listen() here,
 * so tests call `app.handle(new Request(...))` or listen on port 0.
 */
export function createApp(runtime: Runtime, options: PageRouteOptions = {}) {
  const sockets = new SocketServer({ limits: runtime.socketLimits, clientLimits: runtime.clientLimits });
  const app = new Elysia().use(errorsPlugin).use(apiRoutes(runtime)).use(wsRoutes(runtime, sockets)).use(pageRoutes(runtime, options));
  // Bun takes one WebSocket handler per server: every listen() of this app is given the sockets' own.
  const listen = app.listen.bind(app);
  app.listen = ((serve, callback) => {
    const given = typeof serve === "object" ? serve : { port: serve };
    return listen({ ...given, websocket: sockets.websocket } as typeof serve, callback);
  }) as typeof app.listen;
  return app;
}

export type App = ReturnType<typeof createApp>;
