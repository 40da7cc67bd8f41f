import { Elysia } from "elysia";
import type { Db } from "#db/client.ts";
import { apiRoutes } from "~/api/index.ts";
import { errorsPlugin } from "~/api/plugins/errors.ts";
import type { Config } from "~/lib/env.ts";
import type { Mailer } from "~/lib/mailer.ts";
import { pageRoutes } from "~/routes/index.ts";
import { wsRoutes } from "~/ws/index.ts";

export type AppDeps = {
  config: Config;
  db: Db;
  now?: () => Date;
  /** Sign-in mail; defaults to SMTP from SMTP_URL (none: links go to the server log). */
  mailer?: Mailer;
};

/**
 * Composes the whole server: errors -> api -> ws -> assets + SSR. No listen() here, so tests call
 * `app.handle(new Request(...))` or listen on port 0.
 */
export function createApp(deps: AppDeps) {
  return new Elysia().use(errorsPlugin).use(apiRoutes(deps)).use(wsRoutes(deps)).use(pageRoutes(deps));
}

export type App = ReturnType<typeof createApp>;
