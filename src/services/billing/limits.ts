import { and, countDistinct, eq, isNull } from "drizzle-orm";
import { invitations, memberships, namespaces, users } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { type Plan, plans } from "~/lib/plans.ts";
import type { ServiceContext } from "~/services/context.ts";
import { effectivePlan } from "./subscription.ts";

/** The plan whose limits apply to an org; null when none do (billing off, a trial, or a plan without limits). */
export async function limitingPlan(ctx: ServiceContext, orgId: string): Promise<Plan | null> {
  const { plan, isTrial } = await effectivePlan(ctx, orgId);
  if (!plan || isTrial) return null;
  return plans.find((p) => p.id === plan) ?? null;
}

const upgrade = "Upgrade on the billing screen (/dashboard/billing)";

/** Users per org: members plus addresses invited and not yet signed in. Adding someone already counted is free. */
export async function assertUserLimit(ctx: ServiceContext, orgId: string, address: string): Promise<void> {
  const plan = await limitingPlan(ctx, orgId);
  const max = plan?.limits.users;
  if (!plan || max === null || max === undefined) return;
  const members = await ctx.db
    .select({ email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.orgId, orgId));
  const [pending] = await ctx.db
    .select({ n: countDistinct(invitations.email) })
    .from(invitations)
    .innerJoin(namespaces, eq(namespaces.id, invitations.namespaceId))
    .where(and(eq(namespaces.orgId, orgId), isNull(invitations.acceptedAt)));
  const invited = await ctx.db
    .select({ email: invitations.email })
    .from(invitations)
    .innerJoin(namespaces, eq(namespaces.id, invitations.namespaceId))
    .where(and(eq(namespaces.orgId, orgId), eq(invitations.email, address), isNull(invitations.acceptedAt)))
    .limit(1);
  if (members.some((m) => m.email === address) || invited.length > 0) return;
  const count = members.length + (pending?.n ?? 0);
  if (count >= max)
    throw new AppError(
      "FORBIDDEN",
      `The ${plan.name} plan allows ${max} user${max === 1 ? "" : "s"} per organization and this one has ${count}. ${upgrade}, or remove a user first.`,
    );
}

/** Containers per org: `tapscope run`s publishing at the same time (null: no limit). */
export function containerLimit(plan: Plan | null): number | null {
  return plan?.limits.containers ?? null;
}

/** The refusal when an org's containers are all running (at JoinPublisher, and at the publish socket's upgrade). */
export function containersFull(max: number, running: number, planName?: string): AppError {
  const allows = planName ? `The ${planName} plan allows ${max} containers` : `This organization's plan allows ${max} containers`;
  return new AppError(
    "FORBIDDEN",
    `${allows} (tapscope runs publishing at once) per organization and ${running} are running. ${upgrade}, or stop one.`,
  );
}

/** JoinPublisher's early answer from the count it sees; the publish socket's upgrade takes the place for good. */
export function assertContainerLimit(plan: Plan | null, running: number): void {
  const max = containerLimit(plan);
  if (plan && max !== null && running >= max) throw containersFull(max, running, plan.name);
}
