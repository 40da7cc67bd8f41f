import type { Db } from "#db/client.ts";
import type { EventSinks } from "~/engines/ingest/sinks.ts";
import { type Config, memoryShares } from "~/lib/server/env.ts";
import { log } from "~/lib/server/logger.ts";
import type { EventStore } from "~/store/types.ts";
import { startRetention } from "./retention.ts";
import { StoreSink } from "./store-sink.ts";

export type AttachedStore = { sink: StoreSink; close: () => Promise<void> };

/**
 * Plugs the event store into ingest: a batching store sink registered with the app's sinks, and the
 * retention job. The rate limit is applied once, upstream, by ingest (which tells the publisher), so
 * this sink is unlimited here; it keeps its own limiter for paths without ingest in front of them.
 */
export function attachStore(deps: {
  config: Config;
  db: Db;
  store: EventStore;
  sinks: EventSinks;
  now?: () => Date;
  rateLimit?: number;
  /** Keep shared links' events as well (a cluster's nodes read them for late viewers). */
  storeLinks?: boolean;
}): AttachedStore {
  // Drops are counted per namespace; the log gets at most one line per namespace and reason every 10 s.
  const lastLogged = new Map<string, { at: number; pending: number }>();
  const sink = new StoreSink({
    store: deps.store,
    rateLimit: deps.rateLimit ?? 0,
    storeLinks: deps.storeLinks,
    batchSize: deps.store.insertBatchSize,
    // The buffer that absorbs a slow store is the server's largest: a share of the memory budget.
    maxBufferedChars: memoryShares(deps.config.memoryLimitBytes).storeBufferChars,
    onDropped: (target, count, reason) => {
      const key = `${target.namespaceId}:${reason}`;
      const entry = lastLogged.get(key) ?? { at: 0, pending: 0 };
      entry.pending += count;
      const now = Date.now();
      if (now - entry.at >= 10_000) {
        log.warn("events not stored", { namespaceId: target.namespaceId, reason, events: entry.pending });
        entry.at = now;
        entry.pending = 0;
      }
      lastLogged.set(key, entry);
    },
  });
  const remove = deps.sinks.add(sink);
  // The first run waits a little: a server that has just started answers its first requests before it prunes.
  const stopRetention = startRetention(
    { db: deps.db, config: deps.config, store: deps.store, now: deps.now ?? (() => new Date()) },
    { firstRunMs: 30_000 },
  );
  return {
    sink,
    close: async () => {
      remove();
      await stopRetention();
      await sink.close();
    },
  };
}
