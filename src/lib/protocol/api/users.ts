import { type Static, Type } from "@sinclair/typebox";
import { Empty, Id } from "./common.ts";
import { Namespace } from "./orgs.ts";

/**
 * A namespace's users (userId, email, joinTime as an ISO date, hasWrite). Invited addresses that have not accepted
 * yet are listed too, with `isPending: true`, `userId: null`, their `invitationId` and the invitation time as joinTime.
 */
export const NamespaceUser = Type.Object({
  userId: Type.Union([Type.String(), Type.Null()]),
  email: Type.String(),
  joinTime: Type.String(),
  hasWrite: Type.Boolean(),
  isPending: Type.Boolean(),
  invitationId: Type.Union([Type.String(), Type.Null()]),
});
export type NamespaceUser = Static<typeof NamespaceUser>;

export const ListUsersRequest = Type.Object({ namespaceId: Id });
export type ListUsersRequest = Static<typeof ListUsersRequest>;
export const ListUsersResponse = Type.Object({ users: Type.Array(NamespaceUser) });
export type ListUsersResponse = Static<typeof ListUsersResponse>;

export const AddUserRequest = Type.Object({ namespaceId: Id, email: Type.String({ format: "email", maxLength: 254 }) });
export type AddUserRequest = Static<typeof AddUserRequest>;
/**
 * Pending: the address was invited (or already was) and joins when that person accepts; false: already a member.
 * `delivery` (a new invitation only): "email", or "log" when the server cannot send e-mail and logged it instead.
 */
export const AddUserResponse = Type.Object({
  isPending: Type.Boolean(),
  delivery: Type.Optional(Type.Union([Type.Literal("email"), Type.Literal("log")])),
});
export type AddUserResponse = Static<typeof AddUserResponse>;

/**
 * Takes a member out of a namespace (an admin, or the member leaving). `deleteTokens`: the namespace tokens they
 * created stop working too (they saw each once, and a token reads everything the namespace holds).
 */
export const RemoveUserRequest = Type.Object({ namespaceId: Id, userId: Id, deleteTokens: Type.Optional(Type.Boolean()) });
export type RemoveUserRequest = Static<typeof RemoveUserRequest>;
export const RemoveUserResponse = Type.Object({ deletedTokens: Type.Number() });
export type RemoveUserResponse = Static<typeof RemoveUserResponse>;

export const RevokeInvitationRequest = Type.Object({ invitationId: Id });
export type RevokeInvitationRequest = Static<typeof RevokeInvitationRequest>;
export const RevokeInvitationResponse = Empty;
export type RevokeInvitationResponse = Static<typeof RevokeInvitationResponse>;

/** Signs a member of the namespace out everywhere (sessions are the person's, not the namespace's). */
export const EndUserSessionsRequest = Type.Object({ namespaceId: Id, userId: Id });
export type EndUserSessionsRequest = Static<typeof EndUserSessionsRequest>;
export const EndUserSessionsResponse = Type.Object({ endedSessions: Type.Number() });
export type EndUserSessionsResponse = Static<typeof EndUserSessionsResponse>;

/** An invitation addressed to the caller, waiting for their answer. */
export const Invitation = Type.Object({
  invitationId: Type.String(),
  namespaceId: Type.String(),
  namespaceName: Type.String(),
  orgId: Type.String(),
  invitedByEmail: Type.Union([Type.String(), Type.Null()]),
  inviteTime: Type.String(),
});
export type Invitation = Static<typeof Invitation>;

export const ListMyInvitationsRequest = Empty;
export type ListMyInvitationsRequest = Static<typeof ListMyInvitationsRequest>;
export const ListMyInvitationsResponse = Type.Object({ invitations: Type.Array(Invitation) });
export type ListMyInvitationsResponse = Static<typeof ListMyInvitationsResponse>;

export const AnswerInvitationRequest = Type.Object({ invitationId: Id });
export type AnswerInvitationRequest = Static<typeof AnswerInvitationRequest>;
/** The namespace joined, and its org. */
export const AcceptInvitationResponse = Type.Object({ namespace: Namespace, org: Type.Object({ orgId: Type.String() }) });
export type AcceptInvitationResponse = Static<typeof AcceptInvitationResponse>;
export const DeclineInvitationResponse = Empty;
export type DeclineInvitationResponse = Static<typeof DeclineInvitationResponse>;
