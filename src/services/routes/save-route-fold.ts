import { routeFolds } from "#db/schema/index.ts";
import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * Keeps a position the route guard folded, so a restarted server folds it from its first event. Never throws: a fold
 * that is not kept (the namespace was deleted, the database is away) is only counted again after a restart.
 */
export async function saveRouteFold({
  ctx,
  namespaceId,
  prefix,
}: {
  ctx: ServiceContext;
  namespaceId: string;
  prefix: string;
}): Promise<void> {
  try {
    await ctx.db.insert(routeFolds).values({ namespaceId, prefix }).onConflictDoNothing();
  } catch (err) {
    log.warn("a folded route position was not kept", { namespaceId, err: errorMessage(err) });
  }
}
