import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { createNamespace } from "~/services/namespaces/create-namespace.ts";
import { deleteNamespace } from "~/services/namespaces/delete-namespace.ts";
import { listNamespaces } from "~/services/namespaces/list-namespaces.ts";
import { onboardNewUser } from "~/services/namespaces/onboard-new-user.ts";
import { listOrgs } from "~/services/orgs/list-orgs.ts";

/** ListOrgs, ListNamespaces, CreateNamespace, DeleteNamespace, OnboardNewUser. `dropEvents`: the store's part of a deletion. */
export function orgRoutes(ctx: ServiceContext, dropEvents?: (namespaceId: string) => Promise<void>) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/ListOrgs",
      async ({ requireUser }) => ({ orgs: await listOrgs({ ctx, userId: requireUser().userId }) }),
      callSchemas("ListOrgs"),
    )
    .post(
      "/api/ListNamespaces",
      async ({ body, principal }) => ({ namespaces: await listNamespaces({ ctx, principal, orgId: body.orgId }) }),
      callSchemas("ListNamespaces"),
    )
    .post(
      "/api/CreateNamespace",
      ({ body, requireUser }) => createNamespace({ ctx, principal: requireUser(), orgId: body.orgId, name: body.name }),
      callSchemas("CreateNamespace"),
    )
    .post(
      "/api/DeleteNamespace",
      async ({ body, requireUser }) => {
        await deleteNamespace({ ctx, principal: requireUser(), namespaceId: body.namespaceId, dropEvents });
        return {};
      },
      callSchemas("DeleteNamespace"),
    )
    .post(
      "/api/OnboardNewUser",
      ({ body, requireUser }) => onboardNewUser({ ctx, principal: requireUser(), namespaceName: body.namespaceName }),
      callSchemas("OnboardNewUser"),
    );
}
