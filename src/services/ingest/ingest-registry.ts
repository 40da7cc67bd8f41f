import type { Config } from "~/lib/env.ts";
import { Ingest } from "./ingest.ts";
import type { EventSinks } from "./sink.ts";

/** One Ingest per app (keyed by its deps object, like the live hub), so tests that build several apps get one each. */
const ingests = new WeakMap<object, Ingest>();

export function ingestFor(deps: { config: Config; sinks?: EventSinks }): Ingest {
  let ingest = ingests.get(deps);
  if (!ingest) {
    if (!deps.sinks) throw new Error("ingestFor: deps.sinks is not set (createApp sets it)");
    ingest = new Ingest(deps.sinks, { rateLimit: deps.config.ingestRateLimit });
    ingests.set(deps, ingest);
  }
  return ingest;
}
