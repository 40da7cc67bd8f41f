import { eq } from "drizzle-orm";
import { namespaceTokens, orgTokens } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import { tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { cleanTokenLabel } from "./token-label.ts";

const tokenNotFound = () => new AppError("NOT_FOUND", "token not found");

/** Namespace admins name its tokens ("" unnames one); a token of a namespace the caller cannot see is not found. */
export async function renameNamespaceToken({
  ctx,
  principal,
  tokenId,
  label,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  tokenId: string;
  label: string;
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
      forbiddenMessage: tokenForbiddenText("rename", "namespace"),
    });
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") throw tokenNotFound();
    throw err;
  }
  await ctx.db
    .update(namespaceTokens)
    .set({ label: cleanTokenLabel(label) })
    .where(eq(namespaceTokens.id, tokenId));
}

/** Org admins name worker tokens. */
export async function renameOrgToken({
  ctx,
  principal,
  tokenId,
  label,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  tokenId: string;
  label: string;
}): Promise<void> {
  if (!isUuid(tokenId)) throw tokenNotFound();
  const [row] = await ctx.db.select({ orgId: orgTokens.orgId }).from(orgTokens).where(eq(orgTokens.id, tokenId)).limit(1);
  if (!row) throw tokenNotFound();
  try {
    await requireOrgAccess({ ctx, principal, orgId: row.orgId, write: true, forbiddenMessage: tokenForbiddenText("rename", "org") });
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") throw tokenNotFound();
    throw err;
  }
  await ctx.db
    .update(orgTokens)
    .set({ label: cleanTokenLabel(label) })
    .where(eq(orgTokens.id, tokenId));
}
