import { asc, eq } from "drizzle-orm";
import { memberships, orgs } from "#db/schema/index.ts";
import type { Org } from "~/lib/protocol/api/orgs.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * The user's orgs, oldest membership first. lastSeenWorkerTime (ISO or null) lets the dashboard show the Requests link
 * when a worker was seen within 7 days.
 */
export async function listOrgs({ ctx, userId }: { ctx: ServiceContext; userId: string }): Promise<Org[]> {
  const rows = await ctx.db
    .select({ orgId: orgs.id, name: orgs.name, lastSeenWorkerTime: orgs.lastSeenWorkerTime })
    .from(memberships)
    .innerJoin(orgs, eq(orgs.id, memberships.orgId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(memberships.createdAt), asc(orgs.id));
  return rows.map((r) => ({ orgId: r.orgId, name: r.name, lastSeenWorkerTime: r.lastSeenWorkerTime?.toISOString() ?? null }));
}
