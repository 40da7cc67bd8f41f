import { eq } from "drizzle-orm";
import { orgs } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { HasSeenPublisherResponse } from "~/lib/protocol/api/live.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Onboarding's poll: has any publisher of this org ever connected (set by the publisher socket). Members only. */
export async function hasSeenPublisher({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
}): Promise<HasSeenPublisherResponse> {
  await requireOrgAccess({ ctx, principal, orgId });
  const [row] = await ctx.db.select({ hasSeenPublisher: orgs.hasSeenPublisher }).from(orgs).where(eq(orgs.id, orgId)).limit(1);
  if (!row) throw new AppError("NOT_FOUND", "org not found");
  return { hasSeenPublisher: row.hasSeenPublisher };
}
