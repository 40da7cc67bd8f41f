import type { alertRules } from "#db/schema/index.ts";
import type { AlertRule } from "~/lib/protocol/api/endpoints.ts";

type RuleRow = typeof alertRules.$inferSelect;

/** A stored rule as the API shows it: never its webhook's secret. */
export function alertRuleOf(row: RuleRow): AlertRule {
  const hasEndpoint = row.service !== null && row.method !== null && row.route !== null;
  return {
    ruleId: row.id,
    name: row.name,
    metric: row.metric,
    threshold: row.threshold,
    windowMinutes: row.windowMinutes,
    minRequests: row.minRequests,
    endpoint: hasEndpoint ? { service: row.service ?? "", host: row.host ?? "", method: row.method ?? "", route: row.route ?? "" } : null,
    filterText: row.filterText,
    emails: row.emails,
    webhookUrl: row.webhookUrl,
    state: row.state,
    stateSince: row.stateSince?.toISOString() ?? null,
    lastValue: row.lastValue,
    lastRequests: row.lastRequests,
    lastEvaluatedAt: row.lastEvaluatedAt?.toISOString() ?? null,
  };
}

/** How a metric reads in mails, webhooks and the screen: "5xx errors 12.5 % > 5 %", "p95 840 ms > 500 ms". */
export function describeMetric(metric: AlertRule["metric"], value: number | null, threshold: number): string {
  const unit = metric === "p95" || metric === "p99" ? "ms" : "%";
  const name = { server_errors: "5xx errors", all_errors: "4xx and 5xx errors", p95: "p95", p99: "p99" }[metric];
  const shown = value === null ? "no requests" : `${Math.round(value * 10) / 10} ${unit}`;
  return `${name} ${shown} (threshold ${threshold} ${unit})`;
}
