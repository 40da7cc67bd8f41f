import { type Static, Type } from "@sinclair/typebox";
import { OptionalError } from "./common.ts";

/** POST /api/JoinPublisher: where `tapscope run` sends its events (lib/protocol/publish.ts has the socket's messages). */
export const JoinPublisherRequest = Type.Object({
  /** Publish into this shared link (TAPSCOPE_LINK_ID, or the link of a previous join when reconnecting). */
  linkId: Type.Optional(Type.String({ maxLength: 200 })),
});
export type JoinPublisherRequest = Static<typeof JoinPublisherRequest>;

export const JoinPublisherResponse = Type.Object({
  /** ws(s)://.../api/PublishEvents?ticket=...: a one-minute, single-use ticket; never the token. */
  websocketUrl: Type.String(),
  linkId: Type.Optional(Type.String()),
  /** The shared link's page, carrying its expiry: <PUBLIC_URL>/link/<id>?expiry=<ISO date>. */
  linkUrl: Type.Optional(Type.String()),
  namespaceId: Type.Optional(Type.String()),
  /** ISO date: when an anonymous link stops accepting and showing events. */
  expiresAt: Type.Optional(Type.String()),
  error: OptionalError,
});
export type JoinPublisherResponse = Static<typeof JoinPublisherResponse>;
