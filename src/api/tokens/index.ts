import { Elysia } from "elysia";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { deleteNamespaceToken, deleteOrgToken } from "~/services/tokens/delete-token.ts";
import { generateNamespaceToken } from "~/services/tokens/generate-namespace-token.ts";
import { generateOrgToken } from "~/services/tokens/generate-org-token.ts";
import { listNamespaceTokens, listOrgTokens } from "~/services/tokens/list-tokens.ts";
import { tokensModel } from "./model.ts";

/** Namespace (tracer) and org (worker) tokens: generate (shown once), list (masked), delete. */
export function tokenRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/GenerateNamespaceToken",
      ({ body, requireUser }) => generateNamespaceToken({ ctx, principal: requireUser(), namespaceId: body.namespaceId }),
      { body: tokensModel.namespaceBody, response: { 200: tokensModel.generated } },
    )
    .post(
      "/api/GenerateOrgToken",
      ({ body, requireUser }) => generateOrgToken({ ctx, principal: requireUser(), orgId: body.orgId }),
      { body: tokensModel.orgBody, response: { 200: tokensModel.generated } },
    )
    .post(
      "/api/ListNamespaceTokens",
      async ({ body, requireUser }) => ({
        tokens: await listNamespaceTokens({ ctx, principal: requireUser(), namespaceId: body.namespaceId }),
      }),
      { body: tokensModel.namespaceBody, response: { 200: tokensModel.list } },
    )
    .post(
      "/api/ListOrgTokens",
      async ({ body, requireUser }) => ({ tokens: await listOrgTokens({ ctx, principal: requireUser(), orgId: body.orgId }) }),
      { body: tokensModel.orgBody, response: { 200: tokensModel.list } },
    )
    .post(
      "/api/DeleteNamespaceToken",
      async ({ body, requireUser }) => {
        await deleteNamespaceToken({ ctx, principal: requireUser(), tokenId: body.tokenId });
        return {};
      },
      { body: tokensModel.tokenIdBody, response: { 200: tokensModel.empty } },
    )
    .post(
      "/api/DeleteOrgToken",
      async ({ body, requireUser }) => {
        await deleteOrgToken({ ctx, principal: requireUser(), tokenId: body.tokenId });
        return {};
      },
      { body: tokensModel.tokenIdBody, response: { 200: tokensModel.empty } },
    );
}
