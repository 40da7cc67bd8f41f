import { and, eq } from "drizzle-orm";
import { orgs } from "#db/schema/index.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Onboarding waits for this: the org's first publisher connected. Written once, not on every connect. */
export async function markPublisherSeen({ ctx, orgId }: { ctx: ServiceContext; orgId: string }): Promise<void> {
  await ctx.db
    .update(orgs)
    .set({ hasSeenPublisher: true })
    .where(and(eq(orgs.id, orgId), eq(orgs.hasSeenPublisher, false)));
}
