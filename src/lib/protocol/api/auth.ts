import { type Static, Type } from "@sinclair/typebox";
import { OptionalError } from "./common.ts";

/** GET /api/GetSelf: 200 means signed in. */
export const Self = Type.Object({ email: Type.String(), userId: Type.String(), isLoggedIn: Type.Literal(true) });
export type Self = Static<typeof Self>;

export const EmailLoginRequest = Type.Object({
  email: Type.String({ format: "email", maxLength: 254 }),
  next: Type.Optional(Type.String({ maxLength: 2048 })),
});
export type EmailLoginRequest = Static<typeof EmailLoginRequest>;

/**
 * Where the link went: "email", or "log" when the server cannot send e-mail (no SMTP) and wrote it to its log. The
 * spec allows an error beside the 200; this server refuses with a non-200 `{ error }` instead.
 */
export const LinkDelivery = Type.Union([Type.Literal("email"), Type.Literal("log")]);
export type LinkDelivery = Static<typeof LinkDelivery>;
export const EmailLoginResponse = Type.Object({ error: OptionalError, delivery: Type.Optional(LinkDelivery) });
export type EmailLoginResponse = Static<typeof EmailLoginResponse>;

/** GET /api/GoogleRedirect, /api/GithubRedirect. */
export const NextQuery = Type.Object({ next: Type.Optional(Type.String()) });
export type NextQuery = Static<typeof NextQuery>;

export const OAuthCallbackQuery = Type.Object({
  code: Type.Optional(Type.String()),
  state: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
});
export type OAuthCallbackQuery = Static<typeof OAuthCallbackQuery>;

/** No `next`: where the link lands was fixed when it was requested (stored with it), never by its URL. */
export const EmailCallbackQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 256 })) });
export type EmailCallbackQuery = Static<typeof EmailCallbackQuery>;

/**
 * POST /api/FinishEmailLogin, sent by the page the mailed link opens (/login/link): opening a link signs nobody in, so
 * mail scanners and link previews spend nothing. `confirm`: the person saw whose account the link signs into.
 */
export const FinishEmailLoginRequest = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 256 }),
  confirm: Type.Optional(Type.Boolean()),
});
export type FinishEmailLoginRequest = Static<typeof FinishEmailLoginRequest>;
/**
 * Signed in (the session cookie is set; go to `next`), or, for a link opened in a browser other than the one that
 * asked for it, the address it would sign into, to confirm (nothing spent).
 */
export const FinishEmailLoginResponse = Type.Union([
  Type.Object({ signedIn: Type.Literal(true), next: Type.String() }),
  Type.Object({ signedIn: Type.Literal(false), email: Type.String() }),
]);
export type FinishEmailLoginResponse = Static<typeof FinishEmailLoginResponse>;
