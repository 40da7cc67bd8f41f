import { and, desc, eq, inArray } from "drizzle-orm";
import type Stripe from "stripe";
import { orgs, stripeEvents, subscriptions } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";
import { notifyPaymentFailed } from "./notify-payment-failed.ts";
import { LIVE_STATUSES, planOfTier } from "./subscription.ts";

/** How old a signed delivery may be (Stripe's default tolerance): older ones are refused as replays. */
const SIGNATURE_TOLERANCE_S = 300;

const HANDLED = new Set([
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.payment_failed",
]);

/**
 * A Stripe webhook delivery: the signature is checked over the raw body (a bad or stale one is refused, nothing
 * changes), each event id is handled once (a replay is acknowledged and ignored), and a subscription row only takes
 * an event at least as new as the one that wrote it (deliveries out of order change nothing backwards). A failed
 * payment is mailed to the org's admins.
 */
export async function handleStripeWebhook({
  ctx,
  rawBody,
  signature,
}: {
  ctx: ServiceContext;
  rawBody: string;
  signature: string | null;
}): Promise<{ received: true; duplicate?: true }> {
  const billing = ctx.config.billing;
  if (!billing || !ctx.stripe) throw new AppError("NOT_FOUND", "billing is not enabled on this server");
  if (!signature) throw new AppError("BAD_REQUEST", "missing Stripe-Signature header");
  let event: Stripe.Event;
  try {
    event = await ctx.stripe.webhooks.constructEventAsync(rawBody, signature, billing.webhookSecret, SIGNATURE_TOLERANCE_S);
  } catch (err) {
    throw new AppError("BAD_REQUEST", `webhook signature rejected: ${(err as Error).message.slice(0, 200)}`);
  }
  // Anything Stripe must be asked for is fetched before the transaction, so a failure leaves the event unhandled.
  const subscription = await subscriptionOf(ctx.stripe, event);
  let failedPayment: { orgId: string; tier: string } | null = null;
  const answer = await ctx.db.transaction(async (tx) => {
    const inserted = await tx.insert(stripeEvents).values({ id: event.id, type: event.type }).onConflictDoNothing().returning();
    if (inserted.length === 0) return { received: true as const, duplicate: true as const };
    if (!HANDLED.has(event.type) || !subscription) return { received: true as const };
    const orgId = subscription.metadata?.orgId ?? "";
    const item = subscription.items?.data?.[0];
    const priceId = item?.price?.id ?? "";
    const tier = Object.entries(billing.prices).find(([, id]) => id === priceId)?.[0];
    if (!orgId || !tier) {
      log.warn("Stripe subscription without an org or a known price: ignored", { subscription: subscription.id, priceId });
      return { received: true as const };
    }
    const status = event.type === "invoice.payment_failed" && subscription.status === "active" ? "past_due" : subscription.status;
    const seconds = (s: number | null | undefined) => (s ? new Date(s * 1000) : null);
    const periodEnd = (item as { current_period_end?: number } | undefined)?.current_period_end;
    const values = {
      orgId,
      stripeSubscriptionId: subscription.id,
      stripeCustomerId: typeof subscription.customer === "string" ? subscription.customer : subscription.customer.id,
      tier,
      status,
      amountCents: item?.price?.unit_amount ?? 0,
      currency: item?.price?.currency ?? "usd",
      trialEnd: seconds(subscription.trial_end),
      currentPeriodEnd: seconds(periodEnd),
      canceledAt: seconds(subscription.canceled_at),
      eventCreated: event.created,
      updatedAt: ctx.now(),
    };
    const [existing] = await tx.select().from(subscriptions).where(eq(subscriptions.stripeSubscriptionId, subscription.id));
    if (!existing) await tx.insert(subscriptions).values(values);
    else if (event.created >= existing.eventCreated)
      await tx.update(subscriptions).set(values).where(eq(subscriptions.stripeSubscriptionId, subscription.id));
    // The org's plan as the retention job reads it: its live subscription's, else Free.
    const [live] = await tx
      .select({ tier: subscriptions.tier })
      .from(subscriptions)
      .where(and(eq(subscriptions.orgId, orgId), inArray(subscriptions.status, [...LIVE_STATUSES])))
      .orderBy(desc(subscriptions.createdAt))
      .limit(1);
    await tx
      .update(orgs)
      .set({ plan: (live && planOfTier(live.tier)?.id) || "free" })
      .where(eq(orgs.id, orgId));
    if (event.type === "invoice.payment_failed") failedPayment = { orgId, tier };
    return { received: true as const };
  });
  // Once per event (a replay stops above), after the change is saved.
  if (failedPayment) {
    const { orgId, tier } = failedPayment;
    const invoice = event.data.object as { amount_due?: unknown; currency?: unknown; hosted_invoice_url?: unknown };
    await notifyPaymentFailed({
      ctx,
      orgId,
      planName: planOfTier(tier)?.name ?? tier,
      invoice: {
        amountDue: typeof invoice.amount_due === "number" ? invoice.amount_due : null,
        currency: typeof invoice.currency === "string" ? invoice.currency : null,
        hostedInvoiceUrl: typeof invoice.hosted_invoice_url === "string" ? invoice.hosted_invoice_url : null,
      },
    });
  }
  return answer;
}

/** The subscription an event is about, as Stripe describes it now (checkout and invoices name it by id). */
async function subscriptionOf(stripe: Stripe, event: Stripe.Event): Promise<Stripe.Subscription | null> {
  if (!HANDLED.has(event.type)) return null;
  const object = event.data.object as { object?: string; id?: string; subscription?: unknown; parent?: unknown };
  if (object.object === "subscription") return event.data.object as Stripe.Subscription;
  const ref =
    object.subscription ??
    (object.parent as { subscription_details?: { subscription?: unknown } } | undefined)?.subscription_details?.subscription;
  const id = typeof ref === "string" ? ref : (ref as { id?: string } | undefined)?.id;
  return id ? stripe.subscriptions.retrieve(id) : null;
}
