import { plans } from "~/lib/plans.ts";
import type { GetBillingStatusResponse } from "~/lib/protocol/api/billing.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { effectivePlan } from "./subscription.ts";

/** Whether this server bills, the org's plan and the limits that apply to it (none in a trial or with billing off). */
export async function getBillingStatus({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: Principal;
  orgId: string;
}): Promise<GetBillingStatusResponse> {
  await requireOrgAccess({ ctx, principal, orgId });
  const { plan, isTrial } = await effectivePlan(ctx, orgId);
  const limits = plan && !isTrial ? (plans.find((p) => p.id === plan)?.limits ?? null) : null;
  return { billingEnabled: Boolean(ctx.config.billing), plan, isTrial, limits };
}
