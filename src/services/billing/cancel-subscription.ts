import { eq } from "drizzle-orm";
import { subscriptions } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Cancels a subscription at Stripe for an admin of its org; the row says so at once (the webhook confirms it). */
export async function cancelSubscription({
  ctx,
  principal,
  stripeSubscriptionId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  stripeSubscriptionId: string;
}): Promise<void> {
  if (!ctx.stripe) throw new AppError("NOT_FOUND", "billing is not enabled on this server");
  const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.stripeSubscriptionId, stripeSubscriptionId));
  if (!row) throw new AppError("NOT_FOUND", "subscription not found");
  await requireOrgAccess({
    ctx,
    principal,
    orgId: row.orgId,
    write: true,
    forbiddenMessage: "forbidden: only an org admin can cancel the plan",
  });
  if (row.status === "canceled") return;
  const canceled = await ctx.stripe.subscriptions.cancel(stripeSubscriptionId);
  await ctx.db
    .update(subscriptions)
    .set({ status: canceled.status, canceledAt: ctx.now(), updatedAt: ctx.now() })
    .where(eq(subscriptions.stripeSubscriptionId, stripeSubscriptionId));
}
