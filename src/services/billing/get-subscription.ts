import type { GetSubscriptionResponse } from "~/lib/protocol/api/billing.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { liveSubscription, planOfTier } from "./subscription.ts";

/** The org's subscription in force, for the billing screen; a tier this server does not know is an error. */
export async function getSubscription({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: Principal;
  orgId: string;
}): Promise<GetSubscriptionResponse> {
  await requireOrgAccess({ ctx, principal, orgId });
  const row = await liveSubscription(ctx, orgId);
  if (!row) return { activeSubscription: null, error: "" };
  const plan = planOfTier(row.tier);
  if (!plan) return { activeSubscription: null, error: `unknown tier name "${row.tier}"` };
  return {
    activeSubscription: {
      stripeSubscriptionId: row.stripeSubscriptionId,
      tier: row.tier,
      planName: plan.name,
      status: row.status,
      amountCents: row.amountCents,
      currency: row.currency,
      trialEnd: row.trialEnd?.toISOString() ?? null,
      currentPeriodEnd: row.currentPeriodEnd?.toISOString() ?? null,
    },
    error: "",
  };
}
