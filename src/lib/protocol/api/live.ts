import { type Static, Type } from "@sinclair/typebox";
import { Id, OptionalError } from "./common.ts";

/** A namespace token may leave namespaceId out: its own namespace. */
export const JoinSubscriberRequest = Type.Object({ namespaceId: Type.Optional(Id) });
export type JoinSubscriberRequest = Static<typeof JoinSubscriberRequest>;
/** ws(s)://.../api/LiveSubscribe?ticket=...: the live frame's source (lib/protocol/live.ts has its messages). */
export const JoinSubscriberResponse = Type.Object({ websocketUrl: Type.String(), error: OptionalError });
export type JoinSubscriberResponse = Static<typeof JoinSubscriberResponse>;

export const HasSeenPublisherRequest = Type.Object({ orgId: Id });
export type HasSeenPublisherRequest = Static<typeof HasSeenPublisherRequest>;
export const HasSeenPublisherResponse = Type.Object({ hasSeenPublisher: Type.Boolean(), error: OptionalError });
export type HasSeenPublisherResponse = Static<typeof HasSeenPublisherResponse>;

export const GetLinkRequest = Type.Object({ linkId: Type.String({ maxLength: 200 }) });
export type GetLinkRequest = Static<typeof GetLinkRequest>;
export const GetLinkResponse = Type.Object({ linkUrl: Type.String(), error: OptionalError });
export type GetLinkResponse = Static<typeof GetLinkResponse>;
