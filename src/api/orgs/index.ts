import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createNamespace } from "~/services/namespaces/create-namespace.ts";
import { deleteNamespace } from "~/services/namespaces/delete-namespace.ts";
import { listNamespaces } from "~/services/namespaces/list-namespaces.ts";
import { onboardNewUser } from "~/services/namespaces/onboard-new-user.ts";
import { listOrgs } from "~/services/orgs/list-orgs.ts";

/** ListOrgs, ListNamespaces, CreateNamespace, DeleteNamespace, OnboardNewUser. `dropEvents`: the store's part of a deletion. */
export function orgRoutes(ctx: ServiceContext, dropEvents?: (namespaceId: string) => Promise<void>) {
  return new Elysia()
    .use(apiCall(ctx, "ListOrgs", async ({ principal }) => ({ orgs: await listOrgs({ ctx, userId: principal.userId }) })))
    .use(
      apiCall(ctx, "ListNamespaces", async ({ body, principal }) => ({
        namespaces: await listNamespaces({ ctx, principal, orgId: body.orgId }),
      })),
    )
    .use(apiCall(ctx, "CreateNamespace", ({ body, principal }) => createNamespace({ ctx, principal, orgId: body.orgId, name: body.name })))
    .use(
      apiCall(ctx, "DeleteNamespace", async ({ body, principal }) => {
        await deleteNamespace({ ctx, principal, namespaceId: body.namespaceId, dropEvents });
        return {};
      }),
    )
    .use(apiCall(ctx, "OnboardNewUser", ({ body, principal }) => onboardNewUser({ ctx, principal, namespaceName: body.namespaceName })));
}
