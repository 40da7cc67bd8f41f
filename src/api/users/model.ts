import { t } from "elysia";

const id = t.String({ maxLength: 64 });

export const usersModel = {
  namespaceBody: t.Object({ namespaceId: id }),
  list: t.Object({
    users: t.Array(
      t.Object({
        userId: t.Nullable(t.String()),
        email: t.String(),
        joinTime: t.String(),
        hasWrite: t.Boolean(),
        isPending: t.Boolean(),
      }),
    ),
  }),
  addBody: t.Object({ namespaceId: id, email: t.String({ format: "email", maxLength: 254 }) }),
  addResponse: t.Object({ isPending: t.Boolean() }),
};
