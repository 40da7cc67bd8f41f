import type { Db } from "#db/client.ts";
import type { Config } from "~/lib/env.ts";
import type { Mailer } from "~/lib/mailer.ts";

/** What every service verb receives: transport-free dependencies. */
export type ServiceContext = {
  db: Db;
  config: Config;
  now: () => Date;
  /** Absent when SMTP_URL is not set: sign-in links then go to the server log. */
  mailer?: Mailer;
};

export function createServiceContext(deps: {
  db: Db;
  config: Config;
  now?: () => Date;
  mailer?: Mailer;
}): ServiceContext {
  return { db: deps.db, config: deps.config, now: deps.now ?? (() => new Date()), mailer: deps.mailer };
}
