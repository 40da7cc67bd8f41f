import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { ServiceContext } from "~/services/context.ts";
import { deleteNamespaceToken, deleteOrgToken } from "~/services/tokens/delete-token.ts";
import { generateNamespaceToken } from "~/services/tokens/generate-namespace-token.ts";
import { generateOrgToken } from "~/services/tokens/generate-org-token.ts";
import { listNamespaceTokens, listOrgTokens } from "~/services/tokens/list-tokens.ts";
import { renameNamespaceToken, renameOrgToken } from "~/services/tokens/rename-token.ts";

/** Namespace (tracer) and org (worker) tokens: generate (shown once), list (masked), rename, delete. */
export function tokenRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(
      apiCall(ctx, "GenerateNamespaceToken", ({ body, principal }) =>
        generateNamespaceToken({ ctx, principal, namespaceId: body.namespaceId, label: body.label }),
      ),
    )
    .use(
      apiCall(ctx, "GenerateOrgToken", ({ body, principal }) => generateOrgToken({ ctx, principal, orgId: body.orgId, label: body.label })),
    )
    .use(
      apiCall(ctx, "ListNamespaceTokens", async ({ body, principal }) => ({
        tokens: await listNamespaceTokens({ ctx, principal, namespaceId: body.namespaceId }),
      })),
    )
    .use(
      apiCall(ctx, "ListOrgTokens", async ({ body, principal }) => ({
        tokens: await listOrgTokens({ ctx, principal, orgId: body.orgId }),
      })),
    )
    .use(
      apiCall(ctx, "DeleteNamespaceToken", async ({ body, principal }) => {
        await deleteNamespaceToken({ ctx, principal, tokenId: body.tokenId });
        return {};
      }),
    )
    .use(
      apiCall(ctx, "DeleteOrgToken", async ({ body, principal }) => {
        await deleteOrgToken({ ctx, principal, tokenId: body.tokenId });
        return {};
      }),
    )
    .use(
      apiCall(ctx, "RenameNamespaceToken", async ({ body, principal }) => {
        await renameNamespaceToken({ ctx, principal, tokenId: body.tokenId, label: body.label });
        return {};
      }),
    )
    .use(
      apiCall(ctx, "RenameOrgToken", async ({ body, principal }) => {
        await renameOrgToken({ ctx, principal, tokenId: body.tokenId, label: body.label });
        return {};
      }),
    );
}
