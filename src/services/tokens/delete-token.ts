import { eq } from "drizzle-orm";
import { namespaceTokens, orgTokens } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

const tokenNotFound = () => new AppError("NOT_FOUND", "token not found");

/**
 * Namespace admins delete its tokens; the token stops authenticating at once (lookups go by its hash row) and
 * the sockets it opened (publish, tunnels) close.
 */
export async function deleteNamespaceToken({
  ctx,
  principal,
  tokenId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  tokenId: string;
}): Promise<void> {
  if (!isUuid(tokenId)) throw tokenNotFound();
  const [row] = await ctx.db
    .select({ namespaceId: namespaceTokens.namespaceId })
    .from(namespaceTokens)
    .where(eq(namespaceTokens.id, tokenId))
    .limit(1);
  if (!row) throw tokenNotFound();
  try {
    await requireNamespaceAccess({
      ctx,
      principal,
      namespaceId: row.namespaceId,
      write: true,
      forbiddenMessage: tokenForbiddenText("delete", "namespace"),
    });
  } catch (err) {
    // A token of a namespace the caller cannot see is as unknown as a token that does not exist.
    if (err instanceof AppError && err.code === "NOT_FOUND") throw tokenNotFound();
    throw err;
  }
  await ctx.db.delete(namespaceTokens).where(eq(namespaceTokens.id, tokenId));
  ctx.sockets?.revoke({ kind: "namespaceToken", tokenId });
}

/** Org admins (admins of any namespace of the org) delete worker tokens; its worker and tunnels are sent away. */
export async function deleteOrgToken({
  ctx,
  principal,
  tokenId,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  tokenId: string;
}): Promise<void> {
  if (!isUuid(tokenId)) throw tokenNotFound();
  const [row] = await ctx.db.select({ orgId: orgTokens.orgId }).from(orgTokens).where(eq(orgTokens.id, tokenId)).limit(1);
  if (!row) throw tokenNotFound();
  try {
    await requireOrgAccess({ ctx, principal, orgId: row.orgId, write: true, forbiddenMessage: tokenForbiddenText("delete", "org") });
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") throw tokenNotFound();
    throw err;
  }
  await ctx.db.delete(orgTokens).where(eq(orgTokens.id, tokenId));
  ctx.sockets?.revoke({ kind: "orgToken", tokenId });
}
