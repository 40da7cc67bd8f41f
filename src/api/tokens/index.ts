import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { deleteNamespaceToken, deleteOrgToken } from "~/services/tokens/delete-token.ts";
import { generateNamespaceToken } from "~/services/tokens/generate-namespace-token.ts";
import { generateOrgToken } from "~/services/tokens/generate-org-token.ts";
import { listNamespaceTokens, listOrgTokens } from "~/services/tokens/list-tokens.ts";

/** Namespace (tracer) and org (worker) tokens: generate (shown once), list (masked), delete. */
export function tokenRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/GenerateNamespaceToken",
      ({ body, requireUser }) => generateNamespaceToken({ ctx, principal: requireUser(), namespaceId: body.namespaceId }),
      callSchemas("GenerateNamespaceToken"),
    )
    .post(
      "/api/GenerateOrgToken",
      ({ body, requireUser }) => generateOrgToken({ ctx, principal: requireUser(), orgId: body.orgId }),
      callSchemas("GenerateOrgToken"),
    )
    .post(
      "/api/ListNamespaceTokens",
      async ({ body, requireUser }) => ({
        tokens: await listNamespaceTokens({ ctx, principal: requireUser(), namespaceId: body.namespaceId }),
      }),
      callSchemas("ListNamespaceTokens"),
    )
    .post(
      "/api/ListOrgTokens",
      async ({ body, requireUser }) => ({ tokens: await listOrgTokens({ ctx, principal: requireUser(), orgId: body.orgId }) }),
      callSchemas("ListOrgTokens"),
    )
    .post(
      "/api/DeleteNamespaceToken",
      async ({ body, requireUser }) => {
        await deleteNamespaceToken({ ctx, principal: requireUser(), tokenId: body.tokenId });
        return {};
      },
      callSchemas("DeleteNamespaceToken"),
    )
    .post(
      "/api/DeleteOrgToken",
      async ({ body, requireUser }) => {
        await deleteOrgToken({ ctx, principal: requireUser(), tokenId: body.tokenId });
        return {};
      },
      callSchemas("DeleteOrgToken"),
    );
}
