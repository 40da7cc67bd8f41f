import type { Db } from "#db/client.ts";
import type { Config } from "~/lib/env.ts";

/** What every service verb receives: transport-free dependencies. */
export type ServiceContext = {
  db: Db;
  config: Config;
  now: () => Date;
};
