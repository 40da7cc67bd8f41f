import { Elysia } from "elysia";
import type { Db } from "#db/client.ts";
import { apiRoutes } from "~/api/index.ts";
import { errorsPlugin } from "~/api/plugins/errors.ts";
import type { Config } from "~/lib/env.ts";
import type { Mailer } from "~/lib/mailer.ts";
import { type GrantedSockets, grantedSocketsFor } from "~/services/access/granted-sockets.ts";
import { EventSinks } from "~/services/ingest/sink.ts";
import type { EventStore } from "~/store/types.ts";
import type { WorkerRegistry } from "~/services/tunnel/worker-registry.ts";
import { pageRoutes } from "~/routes/index.ts";
import { wsRoutes } from "~/ws/index.ts";

export type AppDeps = {
  config: Config;
  db: Db;
  now?: () => Date;
  /** Sign-in mail; defaults to SMTP from SMTP_URL (none: links go to the server log). */
  mailer?: Mailer;
  /** Where validated published events go (store, live fan-out); created by createApp when absent. */
  sinks?: EventSinks;
  /** The namespace event store (DuckDB in DATA_DIR, or ClickHouse); absent: events are not kept. */
  store?: EventStore;
  /** Routes each org's ingest and queries to its worker (in-process store or a self-hosted worker). */
  workers?: WorkerRegistry;
  /** The open sockets under the credentials that authorised them; created by createApp when absent. */
  sockets?: GrantedSockets;
  /** A request's socket peer, for per-client limits; default Bun's server.requestIP (app.handle has no socket). */
  peerAddress?: (request: Request) => string | undefined;
};

/**
 * Composes the whole server: errors -> api -> ws -> assets + SSR. No listen() here, so tests call
 * `app.handle(new Request(...))` or listen on port 0.
 */
export function createApp(deps: AppDeps) {
  deps.sinks ??= new EventSinks();
  grantedSocketsFor(deps);
  return new Elysia().use(errorsPlugin).use(apiRoutes(deps)).use(wsRoutes(deps)).use(pageRoutes(deps));
}

export type App = ReturnType<typeof createApp>;
