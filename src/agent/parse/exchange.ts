import type { UnansweredReason } from "~/lib/protocol/event.ts";
import type { BodySample } from "./body.ts";
import type { Http1Head } from "./http1.ts";

/** One HTTP request and its response as the parsers saw them; raw (not redacted, not encoded). */
export type Exchange = {
  eventId: string;
  parentEventId: string;
  request: Http1Head;
  response: Http1Head | null;
  /** "2" for HTTP/2 streams; absent for HTTP/1.x (the head's minor version says which). */
  httpVersion?: string;
  /** Times in microseconds (the relay's clock). */
  requestStartAt: number;
  requestEndAt: number;
  responseStartAt: number;
  responseEndAt: number;
  requestBodyWire: number;
  responseBodyWire: number;
  requestBody: BodySample | null;
  responseBody: BodySample | null;
  requestTrailers: Array<[string, string]> | null;
  responseTrailers: Array<[string, string]> | null;
  /** 1xx responses seen before the final one (100-continue, 103 early hints). */
  interimStatuses: number[];
  isRequestDone: boolean;
  isResponseDone: boolean;
  /** The first exchange of an outbound connection carries the connect time. */
  isFirstOnConnection: boolean;
  /** Why the exchange ended without a complete response ("" when it completed). */
  incompleteReason: string;
  /** Set when the request ended without a response head: why, and when (its duration runs to there). */
  unanswered?: { reason: UnansweredReason; at: number };
  /** A CONNECT answered 2xx: when its tunnel closed (its duration runs to there); absent otherwise. */
  tunnelClosedAt?: number;
  /**
   * Set when a message's framing cannot be trusted (Content-Length and Transfer-Encoding together): which message,
   * and why. Peers may split such a connection's bytes into messages differently from us.
   */
  ambiguousFraming?: string;
  /** HTTP/2's extended CONNECT (RFC 8441): the protocol its `:protocol` asks for ("websocket"). */
  connectProtocol?: string;
};
