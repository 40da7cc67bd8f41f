import { t } from "elysia";

export const authModel = {
  self: t.Object({ email: t.String(), userId: t.String(), isLoggedIn: t.Literal(true) }),
  emailLoginBody: t.Object({
    email: t.String({ format: "email", maxLength: 254 }),
    next: t.Optional(t.String({ maxLength: 2048 })),
  }),
  empty: t.Object({}),
  nextQuery: t.Object({ next: t.Optional(t.String()) }),
  oauthCallbackQuery: t.Object({
    code: t.Optional(t.String()),
    state: t.Optional(t.String()),
    error: t.Optional(t.String()),
  }),
  // No `next`: where the link lands was fixed when it was requested (stored with it), never by its URL.
  emailCallbackQuery: t.Object({ token: t.Optional(t.String()) }),
};
