import { orgTokens } from "#db/schema/index.ts";
import type { GenerateTokenResponse } from "~/lib/protocol/api/tokens.ts";
import { tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { requireOrgAccess } from "~/services/access/require-org-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import { newToken } from "~/services/auth/token-format.ts";
import type { ServiceContext } from "~/services/context.ts";
import { cleanTokenLabel } from "./token-label.ts";

/** Org (worker) tokens: org members who administer at least one namespace of the org may create them. */
export async function generateOrgToken({
  ctx,
  principal,
  orgId,
  label,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  orgId: string;
  /** What the token is for; unnamed when absent. */
  label?: string;
}): Promise<GenerateTokenResponse> {
  await requireOrgAccess({ ctx, principal, orgId, write: true, forbiddenMessage: tokenForbiddenText("generate", "org") });
  const name = cleanTokenLabel(label);
  const { token, hash, suffix } = newToken("org");
  const [row] = await ctx.db
    .insert(orgTokens)
    .values({ orgId, tokenHash: hash, suffix, label: name, creatorUserId: principal.userId, createdAt: ctx.now() })
    .returning({ id: orgTokens.id });
  if (!row) throw new Error("token insert returned nothing");
  return { token, tokenId: row.id };
}
