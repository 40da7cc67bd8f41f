import { bigint, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, id, time } from "./columns.ts";
import { orgs } from "./orgs.ts";

/**
 * An org's Stripe subscription as the webhooks last described it (one row per Stripe subscription). `eventCreated`
 * is the Stripe `created` second of the event that wrote the row: an older event arriving late changes nothing.
 */
export const subscriptions = pgTable(
  "subscriptions",
  {
    id: id(),
    orgId: uuid()
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    stripeSubscriptionId: text().notNull().unique(),
    stripeCustomerId: text().notNull(),
    tier: text().notNull(),
    /** Stripe's status: trialing, active, past_due, canceled, unpaid, incomplete, ... */
    status: text().notNull(),
    amountCents: bigint({ mode: "number" }).notNull().default(0),
    currency: text().notNull().default("usd"),
    trialEnd: time(),
    currentPeriodEnd: time(),
    canceledAt: time(),
    eventCreated: bigint({ mode: "number" }).notNull().default(0),
    createdAt: createdAt(),
    updatedAt: createdAt(),
  },
  (t) => [index("subscriptions_org_idx").on(t.orgId)],
);

/** Stripe events already handled, by id: a replayed delivery is acknowledged and ignored. */
export const stripeEvents = pgTable("stripe_events", {
  id: text().primaryKey(),
  type: text().notNull(),
  receivedAt: createdAt(),
});
