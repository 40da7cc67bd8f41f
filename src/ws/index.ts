import { Elysia } from "elysia";
import type { AppDeps } from "~/server.ts";
import { grantedSocketsFor } from "~/services/access/granted-sockets.ts";
import { createServiceContext } from "~/services/context.ts";
import { liveHubFor } from "~/services/live/hub-registry.ts";
import { ingestFor } from "~/services/ingest/ingest-registry.ts";
import { linkPingSocket } from "./link-ping.ts";
import { publishSocket } from "./publish.ts";
import { subscribeSocket } from "./subscribe.ts";
import { tunnelSocket } from "./tunnel.ts";
import { workerSocket } from "./worker.ts";
import { workerRegistryFor } from "~/services/tunnel/worker-registry.ts";

/** WebSocket channels, one file each: publish, subscribe, tunnel, link-ping. */
export function wsRoutes(deps: AppDeps) {
  const sockets = grantedSocketsFor(deps);
  const ctx = createServiceContext(deps);
  return new Elysia({ name: "ws" })
    .use(subscribeSocket({ ctx, hub: liveHubFor(deps), sockets }))
    .use(linkPingSocket({ ctx }))
    .use(publishSocket({ ctx, ingest: ingestFor(deps), presence: liveHubFor(deps), sockets }))
    .use(tunnelSocket({ ctx, workers: workerRegistryFor(deps), ingest: ingestFor(deps), sockets }))
    .use(workerSocket({ ctx, workers: workerRegistryFor(deps), sockets }));
}
