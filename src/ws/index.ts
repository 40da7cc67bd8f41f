import { Elysia } from "elysia";
import type { Runtime } from "~/runtime.ts";
import { linkPingSocket } from "./link-ping.ts";
import { publishSocket } from "./publish.ts";
import { subscribeSocket } from "./subscribe.ts";
import { tunnelSocket } from "./tunnel.ts";
import { workerSocket } from "./worker.ts";

/** WebSocket channels, one file each: publish, subscribe, tunnel, worker, link-ping. */
export function wsRoutes({ ctx, hub, ingest, workers, sockets, tunnels, orgPublishers }: Runtime) {
  return new Elysia({ name: "ws" })
    .use(subscribeSocket({ ctx, hub, sockets }))
    .use(linkPingSocket({ ctx }))
    .use(publishSocket({ ctx, ingest, presence: hub, sockets, orgPublishers }))
    .use(tunnelSocket({ ctx, workers, ingest, sockets, tunnels }))
    .use(workerSocket({ ctx, workers, sockets }));
}
