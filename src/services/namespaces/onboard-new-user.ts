import { and, asc, eq, sql } from "drizzle-orm";
import { memberships, namespaceMembers, namespaces, orgs, users } from "#db/schema/index.ts";
import type { OnboardNewUserResponse } from "~/lib/protocol/api/orgs.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { namespaceNameFromEmail, validNamespaceName } from "./namespace-name.ts";

/**
 * First sign-in: an org and a first namespace (the user is its admin). Idempotent: a user who
 * already has an org gets their first org and namespace back, so a double submit never makes two orgs.
 */
export async function onboardNewUser({
  ctx,
  principal,
  namespaceName,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceName?: string;
}): Promise<OnboardNewUserResponse> {
  const name = () => validNamespaceName(namespaceName?.trim() ? namespaceName : namespaceNameFromEmail(principal.email));
  // A bad name is refused up front for a new user; an onboarded user gets their org back whatever the name.
  const [member] = await ctx.db
    .select({ orgId: memberships.orgId })
    .from(memberships)
    .where(eq(memberships.userId, principal.userId))
    .limit(1);
  if (!member) name();
  return ctx.db.transaction(async (tx) => {
    // Serialises concurrent onboarding of the same user.
    await tx.execute(sql`select 1 from ${users} where ${users.id} = ${principal.userId} for update`);
    const [existing] = await tx
      .select({ orgId: memberships.orgId })
      .from(memberships)
      .where(eq(memberships.userId, principal.userId))
      .orderBy(asc(memberships.createdAt))
      .limit(1);
    if (existing) {
      const [first] = await tx
        .select({ namespaceId: namespaces.id, name: namespaces.name })
        .from(namespaces)
        .innerJoin(namespaceMembers, and(eq(namespaceMembers.namespaceId, namespaces.id), eq(namespaceMembers.userId, principal.userId)))
        .where(eq(namespaces.orgId, existing.orgId))
        .orderBy(asc(namespaces.createdAt))
        .limit(1);
      if (first) return { namespace: first, org: { orgId: existing.orgId } };
    }

    const now = ctx.now();
    const orgId =
      existing?.orgId ??
      (await (async () => {
        const [org] = await tx.insert(orgs).values({ name: principal.email, createdAt: now }).returning({ id: orgs.id });
        if (!org) throw new Error("org insert returned nothing");
        await tx.insert(memberships).values({ orgId: org.id, userId: principal.userId, createdAt: now });
        return org.id;
      })());
    const [ns] = await tx
      .insert(namespaces)
      .values({ orgId, name: name(), createdAt: now })
      .onConflictDoNothing()
      .returning({ namespaceId: namespaces.id, name: namespaces.name });
    const namespace =
      ns ??
      (
        await tx
          .select({ namespaceId: namespaces.id, name: namespaces.name })
          .from(namespaces)
          .where(and(eq(namespaces.orgId, orgId), eq(namespaces.name, name())))
          .limit(1)
      )[0];
    if (!namespace) throw new Error("namespace missing after onboarding");
    await tx
      .insert(namespaceMembers)
      .values({ namespaceId: namespace.namespaceId, userId: principal.userId, hasWrite: true, joinedAt: now })
      .onConflictDoNothing();
    return { namespace, org: { orgId } };
  });
}
