import { LiveHub } from "./hub.ts";

/**
 * The one hub of an app: the publisher socket, the ingest sinks and the subscriber socket all reach it
 * through the app's deps object, so tests that build several apps get one hub each.
 */
const hubs = new WeakMap<object, LiveHub>();

export function liveHubFor(deps: object): LiveHub {
  let hub = hubs.get(deps);
  if (!hub) {
    hub = new LiveHub();
    hubs.set(deps, hub);
  }
  return hub;
}
