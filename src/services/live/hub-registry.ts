import { type Config, memoryShares } from "~/lib/env.ts";
import type { EventSink } from "~/services/ingest/sink.ts";
import { LiveHub } from "./hub.ts";

type SinkRegistry = { add(sink: EventSink): unknown };

/**
 * The one hub of an app: the publisher socket (presence), the ingest sinks (events) and the subscriber socket
 * all reach it through the app's deps object, so tests that build several apps get one hub each.
 * The hub joins the app's ingest sinks (deps.sinks, set by createApp) the first time it is asked for after they exist.
 */
const hubs = new WeakMap<object, LiveHub>();
const registered = new WeakSet<object>();

export function liveHubFor(deps: { config: Partial<Pick<Config, "memoryLimitBytes">>; sinks?: SinkRegistry }): LiveHub {
  let hub = hubs.get(deps);
  if (!hub) {
    const limit = deps.config.memoryLimitBytes;
    hub = new LiveHub(limit ? { totalHistoryBytes: memoryShares(limit).liveHistoryBytes } : {});
    hubs.set(deps, hub);
  }
  if (deps.sinks && !registered.has(deps.sinks)) {
    registered.add(deps.sinks);
    deps.sinks.add(hub);
  }
  return hub;
}
