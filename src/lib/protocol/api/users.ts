import { type Static, Type } from "@sinclair/typebox";
import { Id } from "./common.ts";

/**
 * A namespace's users (userId, email, joinTime as an ISO date, hasWrite). Invited addresses that have not signed
 * in yet are listed too, with `isPending: true`, `userId: null` and the invitation time as joinTime.
 */
export const NamespaceUser = Type.Object({
  userId: Type.Union([Type.String(), Type.Null()]),
  email: Type.String(),
  joinTime: Type.String(),
  hasWrite: Type.Boolean(),
  isPending: Type.Boolean(),
});
export type NamespaceUser = Static<typeof NamespaceUser>;

export const ListUsersRequest = Type.Object({ namespaceId: Id });
export type ListUsersRequest = Static<typeof ListUsersRequest>;
export const ListUsersResponse = Type.Object({ users: Type.Array(NamespaceUser) });
export type ListUsersResponse = Static<typeof ListUsersResponse>;

export const AddUserRequest = Type.Object({ namespaceId: Id, email: Type.String({ format: "email", maxLength: 254 }) });
export type AddUserRequest = Static<typeof AddUserRequest>;
/** Pending: the address has no account yet, so it was invited rather than added. */
export const AddUserResponse = Type.Object({ isPending: Type.Boolean() });
export type AddUserResponse = Static<typeof AddUserResponse>;
