import { Elysia } from "elysia";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ServiceContext } from "~/services/context.ts";
import { addUser } from "~/services/users/add-user.ts";
import { listUsers } from "~/services/users/list-users.ts";
import { usersModel } from "./model.ts";

/** ListUsers (admins and members of a namespace, plus pending invitations) and AddUser (invite). */
export function userRoutes(ctx: ServiceContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/ListUsers",
      async ({ body, requireUser }) => ({ users: await listUsers({ ctx, principal: requireUser(), namespaceId: body.namespaceId }) }),
      { body: usersModel.namespaceBody, response: { 200: usersModel.list } },
    )
    .post(
      "/api/AddUser",
      ({ body, requireUser }) => addUser({ ctx, principal: requireUser(), namespaceId: body.namespaceId, email: body.email }),
      { body: usersModel.addBody, response: { 200: usersModel.addResponse } },
    );
}
