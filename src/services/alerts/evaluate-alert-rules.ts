import { and, asc, desc, eq, inArray, lt, notInArray } from "drizzle-orm";
import { alertDeliveries, alertEvents, alertRules, namespaceMembers, namespaces, users } from "#db/schema/index.ts";
import { errorMessage } from "~/lib/errors.ts";
import { type AlertMetric, alertLimits } from "~/lib/protocol/api/endpoints.ts";
import type { Clause, EndpointRow } from "~/lib/protocol/query.ts";
import type { TunnelWant } from "~/lib/protocol/tunnel.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Runs an endpoints query for a namespace where its events are (the local store or the org's worker). */
export type QueryEndpoints = (
  target: { namespaceId: string; orgId: string },
  want: Extract<TunnelWant, { kind: "endpoints" }>,
) => Promise<EndpointRow[]>;

/** Alert events kept per rule, newest first (their deliveries go with them). */
const keptEvents = 100;

type Rule = typeof alertRules.$inferSelect;

/** The rule's window as a query: its endpoint as clauses, its filter as text, one row for all it keeps. */
export function alertQuery(rule: Rule, nowMs: number): Extract<TunnelWant, { kind: "endpoints" }> {
  const clauses: Clause[] = [];
  if (rule.service !== null && rule.method !== null && rule.route !== null) {
    clauses.push(
      { type: "String", column: "service", op: "Equals", value: rule.service },
      { type: "String", column: "http_req_method", op: "Equals", value: rule.method },
      { type: "String", column: "http_route", op: "Equals", value: rule.route },
      { type: "Number", column: "http_is_outgoing", op: "Equals", value: rule.host ? 1 : 0 },
    );
    if (rule.host) clauses.push({ type: "String", column: "http_req_host", op: "Equals", value: rule.host });
  }
  return {
    kind: "endpoints",
    query: { filter: { clauses, global: { lowerMs: nowMs - rule.windowMinutes * 60_000, upperMs: nowMs } }, isWhole: true, limit: 1 },
    filterText: rule.filterText || undefined,
  };
}

/** The metric's value over the window's requests (a percentage or milliseconds); null without requests. */
export function metricValue(metric: AlertMetric, row: EndpointRow | undefined): number | null {
  if (!row || row.requests === 0) return null;
  switch (metric) {
    case "server_errors":
      return (100 * row.serverErrors) / row.requests;
    case "all_errors":
      return (100 * (row.serverErrors + row.clientErrors)) / row.requests;
    case "p95":
      return row.p95 / 1000;
    case "p99":
      return row.p99 / 1000;
  }
}

/**
 * One round of evaluation: every rule's window is queried (at most alertLimits.maxRules per namespace, one after the
 * other, so a namespace costs at most that many store queries a round) and its state set. A change of state is
 * written only if the state is still what this round read (`WHERE state = old`): when two nodes evaluate at once (a
 * lease handed over), one of them records the change and its notifications, the other finds nothing to change.
 * Returns the alert events it recorded.
 */
export async function evaluateAlertRules({ ctx, query }: { ctx: ServiceContext; query: QueryEndpoints }): Promise<number> {
  const rows = await ctx.db
    .select({ rule: alertRules, orgId: namespaces.orgId })
    .from(alertRules)
    .innerJoin(namespaces, eq(namespaces.id, alertRules.namespaceId))
    .orderBy(asc(alertRules.namespaceId), asc(alertRules.createdAt));
  const perNamespace = new Map<string, number>();
  let recorded = 0;
  for (const { rule, orgId } of rows) {
    const seen = (perNamespace.get(rule.namespaceId) ?? 0) + 1;
    perNamespace.set(rule.namespaceId, seen);
    if (seen > alertLimits.maxRules) continue;
    const nowMs = ctx.now().getTime();
    let found: EndpointRow[];
    try {
      found = await query({ namespaceId: rule.namespaceId, orgId }, alertQuery(rule, nowMs));
    } catch (err) {
      log.warn("alert rule not evaluated: its query failed", { ruleId: rule.id, namespaceId: rule.namespaceId, err: errorMessage(err) });
      continue;
    }
    const row = found[0];
    const value = metricValue(rule.metric, row);
    const requests = row?.requests ?? 0;
    const isBreached = value !== null && requests >= rule.minRequests && value > rule.threshold;
    const state = isBreached ? "firing" : "ok";
    const now = ctx.now();
    const measured = { lastValue: value, lastRequests: requests, lastEvaluatedAt: now };
    if (state === rule.state) {
      await ctx.db
        .update(alertRules)
        .set(measured)
        .where(and(eq(alertRules.id, rule.id), eq(alertRules.state, rule.state)));
      continue;
    }
    if (await recordChange(ctx, rule, state, value, requests, now)) recorded++;
  }
  return recorded;
}

/** The change of state, its event and its notifications, in one transaction; false when another node made it first. */
async function recordChange(ctx: ServiceContext, rule: Rule, state: "ok" | "firing", value: number | null, requests: number, now: Date) {
  return ctx.db.transaction(async (tx) => {
    const changed = await tx
      .update(alertRules)
      .set({ state, stateSince: now, lastValue: value, lastRequests: requests, lastEvaluatedAt: now })
      .where(and(eq(alertRules.id, rule.id), eq(alertRules.state, rule.state)))
      .returning({ id: alertRules.id });
    if (changed.length === 0) return false;
    const [event] = await tx
      .insert(alertEvents)
      .values({
        ruleId: rule.id,
        namespaceId: rule.namespaceId,
        kind: state === "firing" ? "fired" : "resolved",
        value,
        requests,
        threshold: rule.threshold,
        createdAt: now,
      })
      .returning({ id: alertEvents.id });
    if (!event) return false;
    // Mailed only to addresses that are still members of the namespace.
    const members =
      rule.emails.length === 0
        ? []
        : await tx
            .select({ email: users.email })
            .from(namespaceMembers)
            .innerJoin(users, eq(users.id, namespaceMembers.userId))
            .where(and(eq(namespaceMembers.namespaceId, rule.namespaceId), inArray(users.email, rule.emails)));
    const targets: Array<{ channel: "email" | "webhook"; target: string }> = members.map((m) => ({ channel: "email", target: m.email }));
    if (rule.webhookUrl) targets.push({ channel: "webhook", target: rule.webhookUrl });
    if (targets.length > 0) {
      await tx
        .insert(alertDeliveries)
        .values(targets.map((t) => ({ ...t, eventId: event.id, namespaceId: rule.namespaceId, nextAttemptAt: now, createdAt: now })));
    }
    const kept = tx
      .select({ id: alertEvents.id })
      .from(alertEvents)
      .where(eq(alertEvents.ruleId, rule.id))
      .orderBy(desc(alertEvents.createdAt))
      .limit(keptEvents);
    await tx
      .delete(alertEvents)
      .where(and(eq(alertEvents.ruleId, rule.id), notInArray(alertEvents.id, kept), lt(alertEvents.createdAt, now)));
    return true;
  });
}
