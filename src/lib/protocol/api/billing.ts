import { type Static, Type } from "@sinclair/typebox";
import { Empty, Id, OptionalError } from "./common.ts";

const PlanLimits = Type.Object({
  users: Type.Union([Type.Number(), Type.Null()]),
  containers: Type.Union([Type.Number(), Type.Null()]),
  retentionDays: Type.Union([Type.Number(), Type.Null()]),
});

export const GetBillingStatusRequest = Type.Object({ orgId: Id });
export type GetBillingStatusRequest = Static<typeof GetBillingStatusRequest>;
/** billingEnabled false: a self-hosted server without Stripe; plan null and no limits then. */
export const GetBillingStatusResponse = Type.Object({
  billingEnabled: Type.Boolean(),
  plan: Type.Union([Type.String(), Type.Null()]),
  isTrial: Type.Boolean(),
  limits: Type.Union([PlanLimits, Type.Null()]),
  error: OptionalError,
});
export type GetBillingStatusResponse = Static<typeof GetBillingStatusResponse>;

export const ActiveSubscription = Type.Object({
  stripeSubscriptionId: Type.String(),
  tier: Type.String(),
  planName: Type.String(),
  status: Type.String(),
  amountCents: Type.Number(),
  currency: Type.String(),
  trialEnd: Type.Union([Type.String(), Type.Null()]),
  currentPeriodEnd: Type.Union([Type.String(), Type.Null()]),
});
export type ActiveSubscription = Static<typeof ActiveSubscription>;

export const GetSubscriptionRequest = Type.Object({ orgId: Id });
export type GetSubscriptionRequest = Static<typeof GetSubscriptionRequest>;
export const GetSubscriptionResponse = Type.Object({
  activeSubscription: Type.Union([ActiveSubscription, Type.Null()]),
  error: OptionalError,
});
export type GetSubscriptionResponse = Static<typeof GetSubscriptionResponse>;

export const CancelSubscriptionRequest = Type.Object({ stripeSubscriptionId: Type.String({ maxLength: 255 }) });
export type CancelSubscriptionRequest = Static<typeof CancelSubscriptionRequest>;
export const CancelSubscriptionResponse = Empty;
export type CancelSubscriptionResponse = Static<typeof CancelSubscriptionResponse>;

/** Stripe's customer portal for the org (card, invoices): the page to open. */
export const OpenBillingPortalRequest = Type.Object({ orgId: Id });
export type OpenBillingPortalRequest = Static<typeof OpenBillingPortalRequest>;
export const OpenBillingPortalResponse = Type.Object({ url: Type.String() });
export type OpenBillingPortalResponse = Static<typeof OpenBillingPortalResponse>;

/** The paid tiers a checkout may name. */
export const CHECKOUT_TIERS = ["team-20250212", "scale-20250212"] as const;
export type CheckoutTier = (typeof CHECKOUT_TIERS)[number];
