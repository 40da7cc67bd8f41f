import { namespaceMembers, namespaces } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { CreateNamespaceResponse } from "~/lib/protocol/api/orgs.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { validNamespaceName } from "./namespace-name.ts";

export const CREATE_NAMESPACE_FORBIDDEN = "forbidden: you are not allowed to create a namespace";

/** Org admins (hasWrite in any namespace of the org) create namespaces; the creator becomes its admin. */
export async function createNamespace({
  ctx,
  principal,
  orgId,
  name,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
  name: string;
}): Promise<CreateNamespaceResponse> {
  await requireOrgAccess({ ctx, principal, orgId, write: true, forbiddenMessage: CREATE_NAMESPACE_FORBIDDEN });
  const clean = validNamespaceName(name);
  return ctx.db.transaction(async (tx) => {
    // The (org, name) unique index decides races: a conflicting insert returns nothing.
    const [row] = await tx
      .insert(namespaces)
      .values({ orgId, name: clean, createdAt: ctx.now() })
      .onConflictDoNothing()
      .returning({ id: namespaces.id });
    if (!row) throw new AppError("CONFLICT", `a namespace named "${clean}" already exists`);
    await tx.insert(namespaceMembers).values({ namespaceId: row.id, userId: principal.userId, hasWrite: true, joinedAt: ctx.now() });
    return { namespaceId: row.id };
  });
}
