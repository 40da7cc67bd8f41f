import { Type } from "@sinclair/typebox";

/** Ids sent by clients: generous for a UUID, short enough that a hostile body cannot make us carry a novel. */
export const Id = Type.String({ maxLength: 64 });

/** A body or an answer with nothing in it. */
export const Empty = Type.Object({});

/** Some answers name a failure beside a 200 ("{hasSeenPublisher, error}"). */
export const OptionalError = Type.Optional(Type.String());
