import { asc, desc, eq } from "drizzle-orm";
import { alertDeliveries, alertEvents, alertRules } from "#db/schema/index.ts";
import type { ListAlertsResponse } from "~/lib/protocol/api/endpoints.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { alertRuleOf } from "./alert-rule-shape.ts";

/** What a listing shows of a namespace's history and delivery log: the newest. */
const shown = 50;

/** A namespace's alert rules with their state, and its newest alert events and deliveries: any member may read them. */
export async function listAlerts({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
}): Promise<ListAlertsResponse> {
  await requireNamespaceAccess({ ctx, principal, namespaceId });
  const rules = await ctx.db.select().from(alertRules).where(eq(alertRules.namespaceId, namespaceId)).orderBy(asc(alertRules.createdAt));
  const names = new Map(rules.map((r) => [r.id, r.name]));
  const events = await ctx.db
    .select()
    .from(alertEvents)
    .where(eq(alertEvents.namespaceId, namespaceId))
    .orderBy(desc(alertEvents.createdAt))
    .limit(shown);
  const deliveries = await ctx.db
    .select()
    .from(alertDeliveries)
    .where(eq(alertDeliveries.namespaceId, namespaceId))
    .orderBy(desc(alertDeliveries.createdAt), asc(alertDeliveries.channel))
    .limit(shown);
  return {
    rules: rules.map(alertRuleOf),
    events: events.map((e) => ({
      eventId: e.id,
      ruleId: e.ruleId,
      ruleName: names.get(e.ruleId) ?? "",
      kind: e.kind,
      value: e.value,
      requests: e.requests,
      threshold: e.threshold,
      time: e.createdAt.toISOString(),
    })),
    deliveries: deliveries.map((d) => ({
      deliveryId: d.id,
      eventId: d.eventId,
      channel: d.channel,
      target: d.target,
      status: d.status,
      attempts: d.attempts,
      lastError: d.lastError,
      responseStatus: d.responseStatus,
      time: d.createdAt.toISOString(),
      sentAt: d.sentAt?.toISOString() ?? null,
      nextAttemptAt: d.status === "pending" ? d.nextAttemptAt.toISOString() : null,
    })),
  };
}
