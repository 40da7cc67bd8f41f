import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { ServiceContext } from "~/services/context.ts";
import { addUser, INVITATIONS_RATE_LIMITED } from "~/services/users/add-user.ts";
import { acceptInvitation, declineInvitation } from "~/services/users/answer-invitation.ts";
import { endUserSessions } from "~/services/users/end-user-sessions.ts";
import { listMyInvitations } from "~/services/users/list-my-invitations.ts";
import { listUsers } from "~/services/users/list-users.ts";
import { removeUser } from "~/services/users/remove-user.ts";
import { revokeInvitation } from "~/services/users/revoke-invitation.ts";

/**
 * A namespace's people: ListUsers (members and pending invitations), AddUser (invite), RemoveUser, RevokeInvitation,
 * EndUserSessions; and the invited person's side: ListMyInvitations, AcceptInvitation, DeclineInvitation.
 */
export function userRoutes(ctx: ServiceContext, limits: ClientLimits) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/ListUsers",
      async ({ body, requireUser }) => ({ users: await listUsers({ ctx, principal: requireUser(), namespaceId: body.namespaceId }) }),
      callSchemas("ListUsers"),
    )
    .post(
      "/api/AddUser",
      ({ body, requireUser }) =>
        addUser({
          ctx,
          principal: requireUser(),
          namespaceId: body.namespaceId,
          email: body.email,
          admitInvitation: ({ userId, orgId }) =>
            limits.admitAll(
              [
                ["invitations", userId],
                ["orgInvitations", orgId],
              ],
              INVITATIONS_RATE_LIMITED,
            ),
        }),
      callSchemas("AddUser"),
    )
    .post(
      "/api/RemoveUser",
      ({ body, requireUser }) =>
        removeUser({ ctx, principal: requireUser(), namespaceId: body.namespaceId, userId: body.userId, deleteTokens: body.deleteTokens }),
      callSchemas("RemoveUser"),
    )
    .post(
      "/api/RevokeInvitation",
      async ({ body, requireUser }) => {
        await revokeInvitation({ ctx, principal: requireUser(), invitationId: body.invitationId });
        return {};
      },
      callSchemas("RevokeInvitation"),
    )
    .post(
      "/api/EndUserSessions",
      ({ body, requireUser }) => endUserSessions({ ctx, principal: requireUser(), namespaceId: body.namespaceId, userId: body.userId }),
      callSchemas("EndUserSessions"),
    )
    .post(
      "/api/ListMyInvitations",
      async ({ requireUser }) => ({ invitations: await listMyInvitations({ ctx, principal: requireUser() }) }),
      callSchemas("ListMyInvitations"),
    )
    .post(
      "/api/AcceptInvitation",
      ({ body, requireUser }) => acceptInvitation({ ctx, principal: requireUser(), invitationId: body.invitationId }),
      callSchemas("AcceptInvitation"),
    )
    .post(
      "/api/DeclineInvitation",
      async ({ body, requireUser }) => {
        await declineInvitation({ ctx, principal: requireUser(), invitationId: body.invitationId });
        return {};
      },
      callSchemas("DeclineInvitation"),
    );
}
