import { type Static, Type } from "@sinclair/typebox";
import { replayLimits } from "../replay.ts";
import { Id } from "./common.ts";

const Header = Type.Tuple([
  Type.String({ minLength: 1, maxLength: replayLimits.maxHeaderNameChars }),
  Type.String({ maxLength: replayLimits.maxHeaderValueChars }),
]);

/** The API call: what the admin may edit. The host, port and TLS come from the original event. */
export const ResendRequestRequest = Type.Object({
  namespaceId: Id,
  eventId: Id,
  method: Type.String({ minLength: 1, maxLength: replayLimits.maxMethodChars }),
  path: Type.String({ minLength: 1, maxLength: replayLimits.maxPathChars }),
  headers: Type.Array(Header, { maxItems: replayLimits.maxHeaders }),
  /** Base64 of the body. */
  body: Type.String({ maxLength: 4 * Math.ceil(replayLimits.maxBodyBytes / 3) }),
});
export type ResendRequestRequest = Static<typeof ResendRequestRequest>;

export const ResendRequestResponse = Type.Object({
  eventId: Type.String(),
  status: Type.Number(),
  headers: Type.Array(Type.Tuple([Type.String(), Type.String()])),
  body: Type.String(),
  isBodyTruncated: Type.Boolean(),
  durationUs: Type.Number(),
  /** Where it went, in words: "the program at 127.0.0.1:8080", "api.example.com:443 (TLS)". */
  sentTo: Type.String(),
});
export type ResendRequestResponse = Static<typeof ResendRequestResponse>;

export const GetReplayAvailabilityRequest = Type.Object({ namespaceId: Id });
export type GetReplayAvailabilityRequest = Static<typeof GetReplayAvailabilityRequest>;

/** Whether Resend can work now for this caller; `reason` says why not, in a sentence for the button's note. */
export const GetReplayAvailabilityResponse = Type.Object({
  canResend: Type.Boolean(),
  reason: Type.Union([Type.String(), Type.Null()]),
});
export type GetReplayAvailabilityResponse = Static<typeof GetReplayAvailabilityResponse>;
