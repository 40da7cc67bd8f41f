import { inArray, lt, lte, sql } from "drizzle-orm";
import type { Db } from "#db/client.ts";
import { eventLog } from "#db/schema/index.ts";

/** Reports are deleted this many at a time, so one trim never holds a long transaction. */
const BATCH = 10_000;

/**
 * Holds event_log within `maxBytes` (the sum of its rows' `bytes`): the newest reports that fit stay, older ones are
 * deleted. Returns how many were deleted.
 */
export async function trimEventLog({ db, maxBytes }: { db: Db; maxBytes: number }): Promise<number> {
  const [sum] = await db.select({ total: sql<string | number | null>`sum(${eventLog.bytes})` }).from(eventLog);
  if (Number(sum?.total ?? 0) <= maxBytes) return 0;
  const ranked = db
    .select({ id: eventLog.id, newer: sql<string>`sum(${eventLog.bytes}) over (order by ${eventLog.id} desc)`.as("newer") })
    .from(eventLog)
    .as("ranked");
  const [kept] = await db
    .select({ from: sql<string | number | null>`min(${ranked.id})` })
    .from(ranked)
    .where(lte(ranked.newer, sql`${maxBytes}`));
  // Nothing fits (impossible with a report's size bounded far below any allowed budget): everything goes.
  const keepFrom = kept?.from === null || kept?.from === undefined ? Number.MAX_SAFE_INTEGER : Number(kept.from);
  let deleted = 0;
  for (;;) {
    const batch = db.select({ id: eventLog.id }).from(eventLog).where(lt(eventLog.id, keepFrom)).limit(BATCH);
    const rows = await db.delete(eventLog).where(inArray(eventLog.id, batch)).returning({ id: eventLog.id });
    deleted += rows.length;
    if (rows.length < BATCH) return deleted;
  }
}
