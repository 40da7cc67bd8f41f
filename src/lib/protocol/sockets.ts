import type { Callers } from "./api/callers.ts";
import type { ApiCallName } from "./api/calls.ts";
import { linkPingPath, liveSubscribePath } from "./live.ts";
import { publishPath } from "./publish.ts";
import { tunnelPath, workerPath } from "./tunnel.ts";

/**
 * How a WebSocket is opened (ADR 0028); a socket may take more than one:
 * - `ticketFrom`: `?ticket=` from that call's answer: single use, for a minute, carrying the grants it was issued
 *   under. Who may open it is who may make that call; a ticket that is missing, forged, spent, expired or made for
 *   another socket is 401, and so is one whose session, token, membership or namespace has ended since.
 * - `isLinkCapability`: `?link_id=`: knowing a live link's id is the right to it; an unknown or expired one is 404.
 * - `callers`: the upgrade request's own credential, admitted as a call's is (a bearer token; a session cookie only
 *   with our Origin, so no other site can open it in a signed-in browser).
 * Cookies and tokens on a ticket or link socket's request count for nothing: the ticket or the link decides.
 */
type SocketOpening = {
  path: string;
  ticketFrom?: ApiCallName;
  isLinkCapability?: true;
  callers?: Callers;
};

/** Every WebSocket of the server (src/ws/, one file each) and how it is opened. */
export const socketChannels = {
  LiveSubscribe: { path: liveSubscribePath, ticketFrom: "JoinSubscriber", isLinkCapability: true },
  PingLink: { path: linkPingPath, isLinkCapability: true },
  PublishEvents: { path: publishPath, ticketFrom: "JoinPublisher" },
  Tunnel: { path: tunnelPath, ticketFrom: "CreateTunnel" },
  WorkerConnect: { path: workerPath, callers: ["orgToken"] },
} as const satisfies Record<string, SocketOpening>;

export type SocketChannelName = keyof typeof socketChannels;
