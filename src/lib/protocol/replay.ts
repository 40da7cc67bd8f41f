/**
 * Resend (ADR 0041): an admin edits a captured HTTP request and sends it again through a `tapscope run` of the
 * namespace that said `--allow-replay`. The API call (ResendRequest) goes to the server, which takes the target from
 * the stored event (never from the caller) and sends a `replay` order down that run's publish socket; the run sends
 * the request itself, publishes the exchange as a new event whose `replay_of` is the original's id, and answers with
 * a `replayed` message. The run announces that it allows replays in its `hello`, sent after each `ready`.
 */

export const replayLimits = {
  /** Bytes of an edited request body (decoded): its base64 fits an API call's JSON body limit with the headers. */
  maxBodyBytes: 128 * 1024,
  maxHeaders: 100,
  maxHeaderNameChars: 256,
  maxHeaderValueChars: 8192,
  maxPathChars: 8192,
  maxMethodChars: 32,
  /** Response body bytes the run keeps and sends back; the rest is cut (and said so). */
  maxResponseBodyBytes: 256 * 1024,
  /** How long the run waits for the target's response, and a little less than the server waits for the run. */
  runTimeoutMs: 15_000,
  serverTimeoutMs: 20_000,
  /** Orders a server keeps waiting for an answer, in all. */
  maxPending: 256,
  /** Orders a server node has forwarded to the node holding the run (a cluster), waiting for their answer. */
  maxForwarded: 64,
} as const;

/** Where a replay goes, as the server read it from the original event: never from the API caller. */
export type ReplayTarget = {
  /** inbound: the program's own listening address as the relay saw it; outbound: the address it called. */
  direction: "inbound" | "outbound";
  /** host:port (IPv6 in brackets). */
  address: string;
  /** The original Host header (HTTP/2 :authority), sent as the Host header again. */
  host: string;
  /** The original went over TLS: the replay does too (outbound verified as the program would: the system's CAs). */
  isTls: boolean;
  /** The server name (SNI) to verify an outbound TLS target as. */
  serverName: string;
};

/** Server to run, on the publish socket. */
export type ReplayOrder = {
  type: "replay";
  id: string;
  replayOf: string;
  target: ReplayTarget;
  method: string;
  /** Path and query, starting with "/". */
  path: string;
  headers: Array<[string, string]>;
  /** Base64. */
  body: string;
};

/** Run to server, on the publish socket: sent after every "ready" (reconnects included). */
export type PublisherHello = { type: "hello"; allowsReplay: boolean; service: string };

/** Run to server: the answer to a replay order. */
export type ReplayAnswer =
  | {
      type: "replayed";
      id: string;
      ok: true;
      /** The new event's id (it is published like any other). */
      eventId: string;
      status: number;
      headers: Array<[string, string]>;
      /** Base64, at most maxResponseBodyBytes decoded. */
      body: string;
      isBodyTruncated: boolean;
      durationUs: number;
    }
  | { type: "replayed"; id: string; ok: false; error: string };

export const replayForbiddenText = "You do not have permissions to resend this namespace's requests: only its admins can.";
export const noReplayRunText =
  "No tapscope run --allow-replay of this namespace is connected to the server, so nothing can send the request again. Start one, or copy the request as cURL.";

/** Frames a publisher sends as text that are not events: told apart by their start, before any parse. */
export function publisherControlKind(frame: string): "hello" | "replayed" | null {
  if (frame.startsWith('{"type":"hello"')) return "hello";
  if (frame.startsWith('{"type":"replayed"')) return "replayed";
  return null;
}
