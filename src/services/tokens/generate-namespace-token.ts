import { namespaceTokens } from "#db/schema/index.ts";
import type { GenerateTokenResponse } from "~/lib/protocol/api/tokens.ts";
import { tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import { newToken } from "~/services/auth/token-format.ts";
import type { ServiceContext } from "~/services/context.ts";
import { cleanTokenLabel } from "./token-label.ts";

/** Namespace admins create tracer tokens. The token is returned once; only its SHA-256 is kept. */
export async function generateNamespaceToken({
  ctx,
  principal,
  namespaceId,
  label,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  /** What the token is for; unnamed when absent. */
  label?: string;
}): Promise<GenerateTokenResponse> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: tokenForbiddenText("generate", "namespace") });
  const name = cleanTokenLabel(label);
  const { token, hash, suffix } = newToken("namespace");
  const [row] = await ctx.db
    .insert(namespaceTokens)
    .values({ namespaceId, tokenHash: hash, suffix, label: name, creatorUserId: principal.userId, createdAt: ctx.now() })
    .returning({ id: namespaceTokens.id });
  if (!row) throw new Error("token insert returned nothing");
  return { token, tokenId: row.id };
}
