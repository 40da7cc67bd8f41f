import { eq } from "drizzle-orm";
import type { Db } from "#db/client.ts";
import { orgs } from "#db/schema/index.ts";

/** Sets orgs.lastSeenWorkerTime, which shows the dashboard's Requests link (worker seen within 7 days). */
export async function markWorkerSeen({ db, orgId, now }: { db: Db; orgId: string; now: Date }): Promise<void> {
  await db.update(orgs).set({ lastSeenWorkerTime: now }).where(eq(orgs.id, orgId));
}
