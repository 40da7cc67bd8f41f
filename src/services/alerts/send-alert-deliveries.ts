import { and, asc, eq, inArray, lte } from "drizzle-orm";
import { alertDeliveries, alertEvents, alertRules, namespaceMembers, namespaces, users } from "#db/schema/index.ts";
import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import { unseal } from "~/lib/server/sealed.ts";
import type { ServiceContext } from "~/services/context.ts";
import { alertRuleOf, describeMetric } from "./alert-rule-shape.ts";
import { signatureHeader, signWebhook, webhookAddressProblem, webhookSecretPurpose } from "./webhook.ts";

export type DeliveryOptions = {
  /** Attempts before a delivery is given up (failed). */
  maxAttempts: number;
  /** The wait after the first failed attempt; each next one waits three times longer. */
  firstRetryMs: number;
  /** How long a claimed delivery is this node's: past it (the node died mid-send) another node sends it again. */
  claimMs: number;
  /** A webhook's answer is awaited this long. */
  timeoutMs: number;
  /** Deliveries claimed per call. */
  batch: number;
};

export const defaultDeliveryOptions: DeliveryOptions = {
  maxAttempts: 6,
  firstRetryMs: 10_000,
  claimMs: 60_000,
  timeoutMs: 10_000,
  batch: 50,
};

type Due = typeof alertDeliveries.$inferSelect;

/**
 * Sends the alert notifications that are due: each is claimed first (`status`, `attempts` and the claim's expiry set
 * only if nobody changed them since they were read), so two nodes never both send one; a node that dies mid-send
 * leaves its claim to expire and the delivery is sent again (at least once). A failure is retried with backoff
 * (firstRetryMs, three times longer each time) up to maxAttempts; every attempt's outcome is in the delivery log.
 */
export async function sendAlertDeliveries({
  ctx,
  fetch: send = fetch,
  options = defaultDeliveryOptions,
}: {
  ctx: ServiceContext;
  fetch?: typeof fetch;
  options?: DeliveryOptions;
}): Promise<number> {
  const now = ctx.now();
  const due = await ctx.db
    .select()
    .from(alertDeliveries)
    .where(and(inArray(alertDeliveries.status, ["pending", "sending"]), lte(alertDeliveries.nextAttemptAt, now)))
    .orderBy(asc(alertDeliveries.nextAttemptAt))
    .limit(options.batch);
  let sent = 0;
  for (const d of due) {
    const claimed = await ctx.db
      .update(alertDeliveries)
      .set({ status: "sending", attempts: d.attempts + 1, nextAttemptAt: new Date(now.getTime() + options.claimMs) })
      .where(and(eq(alertDeliveries.id, d.id), eq(alertDeliveries.status, d.status), eq(alertDeliveries.attempts, d.attempts)))
      .returning({ id: alertDeliveries.id });
    if (claimed.length === 0) continue;
    const outcome = await attempt(ctx, d, send, options).catch((err: unknown) => ({ error: errorMessage(err), responseStatus: null }));
    const attempts = d.attempts + 1;
    if ("error" in outcome) {
      const isLast = attempts >= options.maxAttempts;
      await ctx.db
        .update(alertDeliveries)
        .set({
          status: isLast ? "failed" : "pending",
          lastError: outcome.error.slice(0, 1000),
          responseStatus: outcome.responseStatus,
          nextAttemptAt: new Date(ctx.now().getTime() + options.firstRetryMs * 3 ** (attempts - 1)),
        })
        .where(eq(alertDeliveries.id, d.id));
      log.warn("alert notification not delivered", { deliveryId: d.id, channel: d.channel, attempts, err: outcome.error });
      continue;
    }
    await ctx.db
      .update(alertDeliveries)
      .set({ status: "sent", sentAt: ctx.now(), lastError: null, responseStatus: outcome.responseStatus })
      .where(eq(alertDeliveries.id, d.id));
    sent++;
  }
  return sent;
}

type Outcome = { responseStatus: number | null } | { error: string; responseStatus: number | null };

async function attempt(ctx: ServiceContext, d: Due, send: typeof fetch, options: DeliveryOptions): Promise<Outcome> {
  const [found] = await ctx.db
    .select({ event: alertEvents, rule: alertRules, namespaceName: namespaces.name })
    .from(alertEvents)
    .innerJoin(alertRules, eq(alertRules.id, alertEvents.ruleId))
    .innerJoin(namespaces, eq(namespaces.id, alertEvents.namespaceId))
    .where(eq(alertEvents.id, d.eventId))
    .limit(1);
  if (!found) return { error: "the alert event is gone", responseStatus: null };
  const { event, rule, namespaceName } = found;
  const isFired = event.kind === "fired";
  const what = describeMetric(rule.metric, event.value, event.threshold);
  const url = `${ctx.config.publicUrl}/dashboard/${encodeURIComponent(namespaceName)}/endpoints`;
  const endpoint =
    rule.route === null
      ? ""
      : ` on ${rule.method} ${rule.host ? `${rule.host}` : ""}${rule.route}${rule.service ? ` (${rule.service})` : ""}`;
  if (d.channel === "email") {
    const [member] = await ctx.db
      .select({ id: users.id })
      .from(namespaceMembers)
      .innerJoin(users, eq(users.id, namespaceMembers.userId))
      .where(and(eq(namespaceMembers.namespaceId, event.namespaceId), eq(users.email, d.target)))
      .limit(1);
    if (!member) return { error: `${d.target} is no longer a member of the namespace`, responseStatus: null };
    const subject = `[Tapscope] ${isFired ? "FIRING" : "Resolved"}: ${rule.name} in ${namespaceName}`;
    const lines = [
      `${isFired ? "Fired" : "Resolved"}: ${rule.name}${endpoint}`,
      `${what}, over the last ${rule.windowMinutes} min, ${event.requests} requests.`,
    ];
    if (rule.filterText) lines.push(`Filter: ${rule.filterText}`);
    lines.push(`At ${event.createdAt.toISOString()}.`, "", `Open the Endpoints screen: ${url}`);
    const text = lines.join("\n");
    if (!ctx.mailer) {
      log.info("alert mail (SMTP_URL is not set)", { to: d.target, subject, text });
      return { error: "SMTP_URL is not set: the mail went to the server log", responseStatus: null };
    }
    await ctx.mailer.send({ to: d.target, subject, text });
    return { responseStatus: null };
  }
  const secret = rule.webhookSecret ? unseal(ctx.config.sessionSecret, webhookSecretPurpose, rule.webhookSecret) : null;
  if (!secret) return { error: "the webhook's signing secret cannot be read (SESSION_SECRET changed?): rotate it", responseStatus: null };
  if (!ctx.config.webhooksToPrivateAddresses) {
    const problem = await webhookAddressProblem(d.target);
    if (problem) return { error: problem, responseStatus: null };
  }
  const body = JSON.stringify({
    type: isFired ? "alert.fired" : "alert.resolved",
    deliveryId: d.id,
    alert: {
      eventId: event.id,
      time: event.createdAt.toISOString(),
      value: event.value,
      requests: event.requests,
      threshold: event.threshold,
      summary: what,
      namespace: { namespaceId: event.namespaceId, name: namespaceName },
      rule: {
        ruleId: rule.id,
        name: rule.name,
        metric: rule.metric,
        windowMinutes: rule.windowMinutes,
        minRequests: rule.minRequests,
        endpoint: alertRuleOf(rule).endpoint,
        filterText: rule.filterText,
      },
      url,
    },
  });
  const res = await send(d.target, {
    method: "POST",
    redirect: "manual",
    signal: AbortSignal.timeout(options.timeoutMs),
    headers: {
      "content-type": "application/json",
      "user-agent": "Tapscope-Webhook/1",
      "x-tapscope-event": isFired ? "alert.fired" : "alert.resolved",
      "x-tapscope-delivery": d.id,
      [signatureHeader]: signWebhook(secret, Math.floor(ctx.now().getTime() / 1000), body),
    },
    body,
  });
  await res.body?.cancel().catch(() => {});
  if (res.status >= 200 && res.status < 300) return { responseStatus: res.status };
  return { error: `the webhook answered ${res.status}`, responseStatus: res.status };
}
