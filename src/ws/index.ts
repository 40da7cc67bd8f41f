import { Elysia } from "elysia";
import type { Runtime } from "~/runtime.ts";
import { linkPingSocket } from "./link-ping.ts";
import { publishSocket } from "./publish.ts";
import type { SocketServer } from "./socket-server.ts";
import { subscribeSocket } from "./subscribe.ts";
import { tunnelSocket } from "./tunnel.ts";
import { workerSocket } from "./worker.ts";

/** WebSocket channels, one file each: publish, subscribe, tunnel, worker, link-ping; all upgraded through `server`. */
export function wsRoutes({ ctx, hub, ingest, workers, sockets, tunnels, orgPublishers, replays }: Runtime, server: SocketServer) {
  return new Elysia({ name: "ws" })
    .use(subscribeSocket({ ctx, hub, sockets, server }))
    .use(linkPingSocket({ ctx, server }))
    .use(publishSocket({ ctx, ingest, presence: hub, sockets, orgPublishers, workers, replays, server }))
    .use(tunnelSocket({ ctx, workers, ingest, sockets, tunnels, server }))
    .use(workerSocket({ ctx, workers, sockets, server }));
}
