import { and, count, eq, inArray } from "drizzle-orm";
import { alertRules, namespaceMembers, users } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { type AlertRuleInput, alertLimits, type SaveAlertRuleResponse } from "~/lib/protocol/api/endpoints.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { seal } from "~/lib/server/sealed.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { alertRuleOf } from "./alert-rule-shape.ts";
import { newWebhookSecret, webhookSecretPurpose, webhookUrlProblem } from "./webhook.ts";

export const SAVE_ALERT_FORBIDDEN = "You do not have permissions to change this namespace's alerts.";

function bad(message: string): never {
  throw new AppError("BAD_REQUEST", message);
}

/**
 * Creates or replaces an alert rule of a namespace (an admin's). Everything is checked before anything is written: the
 * filter parses, the percentages are percentages, the addresses are members' of the namespace (the server mails
 * no one else), the webhook is an http(s) URL. A webhook gets a signing secret when it is first set or `rotateSecret`
 * asks, returned this once. A changed rule starts again from "ok" (its old state was about other conditions).
 */
export async function saveAlertRule({
  ctx,
  principal,
  namespaceId,
  ruleId,
  rule,
  rotateSecret = false,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  ruleId?: string;
  rule: AlertRuleInput;
  rotateSecret?: boolean;
}): Promise<SaveAlertRuleResponse> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: SAVE_ALERT_FORBIDDEN });
  const name = rule.name.trim();
  if (!name) bad("a rule needs a name");
  const isPercent = rule.metric === "server_errors" || rule.metric === "all_errors";
  if (isPercent && rule.threshold > 100) bad("an error rate's threshold is a percentage, 0 to 100");
  const filterText = rule.filterText.trim();
  if (filterText) {
    const parsed = parseFilter(filterText);
    if (!parsed.ok) bad(`filter: ${parsed.error.message} (at position ${parsed.error.position})`);
  }
  if (!rule.endpoint && !filterText && rule.emails.length + (rule.webhookUrl ? 1 : 0) === 0) {
    bad("a rule notifies someone: add an address or a webhook");
  }
  const emails = [...new Set(rule.emails.map((e) => e.trim().toLowerCase()))];
  if (emails.length > 0) {
    const members = await ctx.db
      .select({ email: users.email })
      .from(namespaceMembers)
      .innerJoin(users, eq(users.id, namespaceMembers.userId))
      .where(and(eq(namespaceMembers.namespaceId, namespaceId), inArray(users.email, emails)));
    const known = new Set(members.map((m) => m.email.toLowerCase()));
    const stranger = emails.find((e) => !known.has(e));
    if (stranger) bad(`${stranger} is not a member of this namespace: alerts mail members only`);
  }
  const webhookUrl = rule.webhookUrl?.trim() || null;
  if (webhookUrl) {
    const problem = webhookUrlProblem(webhookUrl);
    if (problem) bad(problem);
  }
  if (rule.endpoint && rule.endpoint.method === "" && rule.endpoint.route === "") bad("an endpoint needs its method and route");

  const existing = ruleId
    ? (
        await ctx.db
          .select()
          .from(alertRules)
          .where(
            and(
              eq(alertRules.id, isUuid(ruleId) ? ruleId : "00000000-0000-0000-0000-000000000000"),
              eq(alertRules.namespaceId, namespaceId),
            ),
          )
          .limit(1)
      )[0]
    : undefined;
  if (ruleId && !existing) throw new AppError("NOT_FOUND", "alert rule not found");
  if (!existing) {
    const [{ n } = { n: 0 }] = await ctx.db.select({ n: count() }).from(alertRules).where(eq(alertRules.namespaceId, namespaceId));
    if (n >= alertLimits.maxRules) bad(`a namespace has at most ${alertLimits.maxRules} alert rules`);
  }
  const needsSecret = webhookUrl !== null && (rotateSecret || !existing?.webhookSecret);
  const secret = needsSecret ? newWebhookSecret() : null;
  const values = {
    name,
    metric: rule.metric,
    threshold: rule.threshold,
    windowMinutes: rule.windowMinutes,
    minRequests: rule.minRequests,
    service: rule.endpoint?.service ?? null,
    host: rule.endpoint?.host ?? null,
    method: rule.endpoint?.method ?? null,
    route: rule.endpoint?.route ?? null,
    filterText,
    emails,
    webhookUrl,
    webhookSecret:
      webhookUrl === null
        ? null
        : secret
          ? seal(ctx.config.sessionSecret, webhookSecretPurpose, secret)
          : (existing?.webhookSecret ?? null),
    state: "ok" as const,
    stateSince: null,
    lastValue: null,
    lastRequests: null,
    lastEvaluatedAt: null,
  };
  const [saved] = existing
    ? await ctx.db.update(alertRules).set(values).where(eq(alertRules.id, existing.id)).returning()
    : await ctx.db
        .insert(alertRules)
        .values({ ...values, namespaceId, createdByUserId: principal.userId, createdAt: ctx.now() })
        .returning();
  if (!saved) throw new AppError("NOT_FOUND", "alert rule not found");
  return { rule: alertRuleOf(saved), webhookSecret: secret };
}
