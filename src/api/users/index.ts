import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
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
    .use(
      apiCall(ctx, "ListUsers", async ({ body, principal }) => ({
        users: await listUsers({ ctx, principal, namespaceId: body.namespaceId }),
      })),
    )
    .use(
      apiCall(ctx, "AddUser", ({ body, principal }) =>
        addUser({
          ctx,
          principal,
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
      ),
    )
    .use(
      apiCall(ctx, "RemoveUser", ({ body, principal }) =>
        removeUser({ ctx, principal, namespaceId: body.namespaceId, userId: body.userId, deleteTokens: body.deleteTokens }),
      ),
    )
    .use(
      apiCall(ctx, "RevokeInvitation", async ({ body, principal }) => {
        await revokeInvitation({ ctx, principal, invitationId: body.invitationId });
        return {};
      }),
    )
    .use(
      apiCall(ctx, "EndUserSessions", ({ body, principal }) =>
        endUserSessions({ ctx, principal, namespaceId: body.namespaceId, userId: body.userId }),
      ),
    )
    .use(apiCall(ctx, "ListMyInvitations", async ({ principal }) => ({ invitations: await listMyInvitations({ ctx, principal }) })))
    .use(apiCall(ctx, "AcceptInvitation", ({ body, principal }) => acceptInvitation({ ctx, principal, invitationId: body.invitationId })))
    .use(
      apiCall(ctx, "DeclineInvitation", async ({ body, principal }) => {
        await declineInvitation({ ctx, principal, invitationId: body.invitationId });
        return {};
      }),
    );
}
