import { and, eq } from "drizzle-orm";
import { namespaceMembers, namespaces, users } from "#db/schema/index.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";

/** What a failed invoice says (Stripe's invoice object, from a signed webhook). */
export type FailedInvoice = { amountDue: number | null; currency: string | null; hostedInvoiceUrl: string | null };

/** The org's admins (admins of any of its namespaces): who can change the card. */
async function orgAdminEmails(ctx: ServiceContext, orgId: string): Promise<string[]> {
  const rows = await ctx.db
    .selectDistinct({ email: users.email })
    .from(namespaceMembers)
    .innerJoin(namespaces, eq(namespaces.id, namespaceMembers.namespaceId))
    .innerJoin(users, eq(users.id, namespaceMembers.userId))
    .where(and(eq(namespaces.orgId, orgId), eq(namespaceMembers.hasWrite, true)));
  return rows.map((r) => r.email).sort();
}

function money(cents: number, currency: string): string {
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency: currency.toUpperCase() }).format(cents / 100);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
}

/**
 * Mails the org's admins that a payment failed, with where to change the card (Manage billing on the billing screen).
 * A mail that cannot be sent is logged: the subscription's state is already recorded, and the screen says so too.
 */
export async function notifyPaymentFailed({
  ctx,
  orgId,
  planName,
  invoice,
}: {
  ctx: ServiceContext;
  orgId: string;
  planName: string;
  invoice: FailedInvoice;
}): Promise<void> {
  const admins = await orgAdminEmails(ctx, orgId);
  const amount = invoice.amountDue !== null && invoice.currency ? `of ${money(invoice.amountDue, invoice.currency)} ` : "";
  const text =
    `The payment ${amount}for your organization's Tapscope ${planName} plan failed.\n\n` +
    "Stripe will try again. If every try fails, the subscription ends and the organization returns to the Free plan's limits.\n\n" +
    `Update the card with Manage billing on the billing screen: ${ctx.config.publicUrl}/dashboard/billing\n` +
    (invoice.hostedInvoiceUrl ? `\nThe invoice: ${invoice.hostedInvoiceUrl}\n` : "");
  const subject = `Tapscope: the payment for your ${planName} plan failed`;
  if (!ctx.mailer) {
    log.warn("a payment failed; no SMTP_URL, so the org's admins were not mailed", { orgId, admins: admins.length });
    return;
  }
  const mailer = ctx.mailer;
  await Promise.all(
    admins.map((to) => mailer.send({ to, subject, text }).catch((err) => log.warn("payment-failed e-mail failed", { to, err }))),
  );
}
