import { t } from "elysia";

const id = t.String({ maxLength: 64 });
const namespace = t.Object({ namespaceId: t.String(), name: t.String() });

export const orgsModel = {
  empty: t.Object({}),
  listOrgsResponse: t.Object({ orgs: t.Array(t.Object({ orgId: t.String(), lastSeenWorkerTime: t.Nullable(t.String()) })) }),
  orgBody: t.Object({ orgId: id }),
  listNamespacesResponse: t.Object({ namespaces: t.Array(namespace) }),
  createNamespaceBody: t.Object({ orgId: id, name: t.String({ maxLength: 200 }) }),
  createNamespaceResponse: t.Object({ namespaceId: t.String() }),
  onboardBody: t.Object({ namespaceName: t.Optional(t.String({ maxLength: 200 })) }),
  onboardResponse: t.Object({ namespace, org: t.Object({ orgId: t.String() }) }),
};
