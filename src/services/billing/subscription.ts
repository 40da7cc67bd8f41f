import { and, desc, eq, inArray } from "drizzle-orm";
import { subscriptions } from "#db/schema/index.ts";
import { type Plan, type PlanId, plans } from "~/lib/plans.ts";
import type { ServiceContext } from "~/services/context.ts";

export type SubscriptionRow = typeof subscriptions.$inferSelect;

/** Statuses under which the plan applies (Stripe keeps a past-due subscription until it gives up). */
export const LIVE_STATUSES = ["trialing", "active", "past_due"] as const;

export function planOfTier(tier: string): Plan | undefined {
  return plans.find((plan) => plan.tier === tier);
}

/** The org's subscription that is in force, newest first; null when it has none. */
export async function liveSubscription(ctx: ServiceContext, orgId: string): Promise<SubscriptionRow | null> {
  const [row] = await ctx.db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.orgId, orgId), inArray(subscriptions.status, [...LIVE_STATUSES])))
    .orderBy(desc(subscriptions.createdAt))
    .limit(1);
  return row ?? null;
}

/** Whether the org ever had a subscription (the 14-day trial is for a first one). */
export async function hasHadSubscription(ctx: ServiceContext, orgId: string): Promise<SubscriptionRow | null> {
  const [row] = await ctx.db
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.orgId, orgId))
    .orderBy(desc(subscriptions.createdAt))
    .limit(1);
  return row ?? null;
}

/**
 * The plan an org is on: with billing off, none (no limits); otherwise its live subscription's plan, or Free. A
 * trialing subscription is its plan with no limits until the trial ends.
 */
export async function effectivePlan(ctx: ServiceContext, orgId: string): Promise<{ plan: PlanId | null; isTrial: boolean }> {
  if (!ctx.config.billing) return { plan: null, isTrial: false };
  const row = await liveSubscription(ctx, orgId);
  const plan = row ? planOfTier(row.tier) : undefined;
  if (!row || !plan) return { plan: "free", isTrial: false };
  return { plan: plan.id, isTrial: row.status === "trialing" && (row.trialEnd?.getTime() ?? 0) > ctx.now().getTime() };
}
