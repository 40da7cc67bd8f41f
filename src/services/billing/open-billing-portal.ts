import { AppError } from "~/lib/errors.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { hasHadSubscription } from "./subscription.ts";

export const MANAGE_BILLING_FORBIDDEN = "forbidden: only an org admin can manage billing";

/**
 * A Stripe customer portal session for an org admin (change the card, see and pay invoices), back to the billing
 * screen afterwards. Returns the page to send the browser to. The org needs a Stripe customer: one made by checkout.
 */
export async function openBillingPortal({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
}): Promise<{ url: string }> {
  if (!ctx.config.billing || !ctx.stripe) throw new AppError("NOT_FOUND", "billing is not enabled on this server");
  await requireOrgAccess({ ctx, principal, orgId, write: true, forbiddenMessage: MANAGE_BILLING_FORBIDDEN });
  const customer = (await hasHadSubscription(ctx, orgId))?.stripeCustomerId;
  if (!customer) throw new AppError("CONFLICT", "this organization has no billing account yet: choose a plan first");
  const session = await ctx.stripe.billingPortal.sessions.create({ customer, return_url: `${ctx.config.publicUrl}/dashboard/billing` });
  return { url: session.url };
}
