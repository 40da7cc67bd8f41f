import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { addUser } from "~/services/users/add-user.ts";
import { listUsers } from "~/services/users/list-users.ts";

/** ListUsers (admins and members of a namespace, plus pending invitations) and AddUser (invite). */
export function userRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/ListUsers",
      async ({ body, requireUser }) => ({ users: await listUsers({ ctx, principal: requireUser(), namespaceId: body.namespaceId }) }),
      callSchemas("ListUsers"),
    )
    .post(
      "/api/AddUser",
      ({ body, requireUser }) => addUser({ ctx, principal: requireUser(), namespaceId: body.namespaceId, email: body.email }),
      callSchemas("AddUser"),
    );
}
