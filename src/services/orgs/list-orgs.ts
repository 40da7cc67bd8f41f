import { asc, eq } from "drizzle-orm";
import { memberships, orgs } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

/** The user's orgs, oldest membership first (the client uses the first). */
export async function listOrgs({ ctx, userId }: { ctx: ServiceContext; userId: string }): Promise<{ orgId: string }[]> {
  return ctx.db
    .select({ orgId: orgs.id })
    .from(memberships)
    .innerJoin(orgs, eq(orgs.id, memberships.orgId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(memberships.createdAt), asc(orgs.id));
}
