import { AppError } from "~/lib/errors.ts";
import { TRIAL_DAYS } from "~/lib/plans.ts";
import { CHECKOUT_TIERS, type CheckoutTier } from "~/lib/protocol/api/billing.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { hasHadSubscription, liveSubscription } from "./subscription.ts";

/**
 * A Stripe Checkout session (subscription mode) for an org admin: the tier's price, 14 days of trial for the org's
 * first subscription, back to the billing screen either way. Returns the page to send the browser to.
 */
export async function startCheckout({
  ctx,
  principal,
  orgId,
  tierName,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
  tierName: string;
}): Promise<string> {
  const billing = ctx.config.billing;
  if (!billing || !ctx.stripe) throw new AppError("NOT_FOUND", "billing is not enabled on this server");
  if (!(CHECKOUT_TIERS as readonly string[]).includes(tierName))
    throw new AppError("BAD_REQUEST", `unknown tier name "${tierName.slice(0, 64)}": use ${CHECKOUT_TIERS.join(" or ")}`);
  const tier = tierName as CheckoutTier;
  await requireOrgAccess({ ctx, principal, orgId, write: true, forbiddenMessage: "forbidden: only an org admin can change the plan" });
  if (await liveSubscription(ctx, orgId))
    throw new AppError("CONFLICT", "this org already has a subscription: cancel it on the billing screen before choosing another plan");
  const previous = await hasHadSubscription(ctx, orgId);
  const back = `${ctx.config.publicUrl}/dashboard/billing`;
  const session = await ctx.stripe.checkout.sessions.create({
    mode: "subscription",
    line_items: [{ price: billing.prices[tier], quantity: 1 }],
    client_reference_id: orgId,
    ...(previous ? { customer: previous.stripeCustomerId } : { customer_email: principal.email }),
    subscription_data: { metadata: { orgId, tier }, ...(previous ? {} : { trial_period_days: TRIAL_DAYS }) },
    metadata: { orgId, tier },
    success_url: `${back}?checkout=success`,
    cancel_url: `${back}?checkout=cancelled`,
  });
  if (!session.url) throw new Error("Stripe returned a checkout session without a URL");
  return session.url;
}
