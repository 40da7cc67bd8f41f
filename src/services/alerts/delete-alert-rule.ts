import { and, eq } from "drizzle-orm";
import { alertRules } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { SAVE_ALERT_FORBIDDEN } from "./save-alert-rule.ts";

/** Deletes an alert rule (an admin's), its history and its deliveries not yet sent. */
export async function deleteAlertRule({
  ctx,
  principal,
  namespaceId,
  ruleId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  ruleId: string;
}): Promise<Record<string, never>> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: SAVE_ALERT_FORBIDDEN });
  if (!isUuid(ruleId)) throw new AppError("NOT_FOUND", "alert rule not found");
  const deleted = await ctx.db
    .delete(alertRules)
    .where(and(eq(alertRules.id, ruleId), eq(alertRules.namespaceId, namespaceId)))
    .returning({ id: alertRules.id });
  if (deleted.length === 0) throw new AppError("NOT_FOUND", "alert rule not found");
  return {};
}
