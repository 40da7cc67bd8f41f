import { desc, eq } from "drizzle-orm";
import { namespaceTokens, orgTokens, users } from "#db/schema/index.ts";
import type { Token } from "~/lib/protocol/api/tokens.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import { displayName } from "~/services/auth/token-format.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Namespace members see its tokens, masked (prefix, '...', last characters), newest first. */
export async function listNamespaceTokens({
  ctx,
  principal,
  namespaceId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
}): Promise<Token[]> {
  await requireNamespaceAccess({ ctx, principal, namespaceId });
  const rows = await ctx.db
    .select({
      id: namespaceTokens.id,
      createdAt: namespaceTokens.createdAt,
      suffix: namespaceTokens.suffix,
      label: namespaceTokens.label,
      lastUsedAt: namespaceTokens.lastUsedAt,
      email: users.email,
    })
    .from(namespaceTokens)
    .leftJoin(users, eq(users.id, namespaceTokens.creatorUserId))
    .where(eq(namespaceTokens.namespaceId, namespaceId))
    .orderBy(desc(namespaceTokens.createdAt), desc(namespaceTokens.id));
  return rows.map((r) => summary("namespace", r));
}

/** Org members see the org's worker tokens, masked, newest first. */
export async function listOrgTokens({
  ctx,
  principal,
  orgId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
}): Promise<Token[]> {
  await requireOrgAccess({ ctx, principal, orgId });
  const rows = await ctx.db
    .select({
      id: orgTokens.id,
      createdAt: orgTokens.createdAt,
      suffix: orgTokens.suffix,
      label: orgTokens.label,
      lastUsedAt: orgTokens.lastUsedAt,
      email: users.email,
    })
    .from(orgTokens)
    .leftJoin(users, eq(users.id, orgTokens.creatorUserId))
    .where(eq(orgTokens.orgId, orgId))
    .orderBy(desc(orgTokens.createdAt), desc(orgTokens.id));
  return rows.map((r) => summary("org", r));
}

function summary(
  kind: "namespace" | "org",
  r: { id: string; createdAt: Date; suffix: string; label: string; lastUsedAt: Date | null; email: string | null },
): Token {
  return {
    tokenId: r.id,
    createTime: r.createdAt.toISOString(),
    name: displayName(kind, r.suffix),
    creatorEmail: r.email,
    label: r.label,
    lastUsedTime: r.lastUsedAt?.toISOString() ?? null,
  };
}
