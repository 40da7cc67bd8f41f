import { type Static, Type } from "@sinclair/typebox";
import { Empty, Id } from "./common.ts";

/**
 * lastSeenWorkerTime (ISO date, null before any worker connected) decides whether the Requests link shows; `name` (its
 * creator's address) tells a member's orgs apart.
 */
export const Org = Type.Object({
  orgId: Type.String(),
  name: Type.String(),
  lastSeenWorkerTime: Type.Union([Type.String(), Type.Null()]),
});
export type Org = Static<typeof Org>;

export const Namespace = Type.Object({ namespaceId: Type.String(), name: Type.String() });
export type Namespace = Static<typeof Namespace>;

export const ListOrgsRequest = Empty;
export type ListOrgsRequest = Static<typeof ListOrgsRequest>;
/** Oldest membership first. */
export const ListOrgsResponse = Type.Object({ orgs: Type.Array(Org) });
export type ListOrgsResponse = Static<typeof ListOrgsResponse>;

export const ListNamespacesRequest = Type.Object({ orgId: Id });
export type ListNamespacesRequest = Static<typeof ListNamespacesRequest>;
export const ListNamespacesResponse = Type.Object({ namespaces: Type.Array(Namespace) });
export type ListNamespacesResponse = Static<typeof ListNamespacesResponse>;

export const CreateNamespaceRequest = Type.Object({ orgId: Id, name: Type.String({ maxLength: 200 }) });
export type CreateNamespaceRequest = Static<typeof CreateNamespaceRequest>;
export const CreateNamespaceResponse = Type.Object({ namespaceId: Type.String() });
export type CreateNamespaceResponse = Static<typeof CreateNamespaceResponse>;

export const OnboardNewUserRequest = Type.Object({ namespaceName: Type.Optional(Type.String({ maxLength: 200 })) });
export type OnboardNewUserRequest = Static<typeof OnboardNewUserRequest>;
/** A new org has never seen a worker, so its id is all there is to say. */
export const OnboardNewUserResponse = Type.Object({ namespace: Namespace, org: Type.Object({ orgId: Type.String() }) });
export type OnboardNewUserResponse = Static<typeof OnboardNewUserResponse>;

/** Deletes a namespace with its members, invitations, tokens, links and stored events (an org keeps at least one). */
export const DeleteNamespaceRequest = Type.Object({ namespaceId: Id });
export type DeleteNamespaceRequest = Static<typeof DeleteNamespaceRequest>;
export const DeleteNamespaceResponse = Empty;
export type DeleteNamespaceResponse = Static<typeof DeleteNamespaceResponse>;
