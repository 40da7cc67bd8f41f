import { Elysia, t } from "elysia";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { Ingest } from "~/engines/ingest/ingest.ts";
import type { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { publishLimits } from "~/lib/protocol/publish.ts";
import { decodeRequest, encodeResult, errorResult, TunnelProtocolError, type TunnelRequest, tunnelPath } from "~/lib/protocol/tunnel.ts";
import { log } from "~/lib/server/logger.ts";
import type { ServiceContext } from "~/services/context.ts";
import { insertEvents } from "~/services/tunnel/insert-events.ts";
import { redeemTunnelTicket, type TunnelClaims } from "~/services/tunnel/tunnel-ticket.ts";
import type { ChannelSocket, RawFrame, SocketChannel, SocketServer } from "./socket-server.ts";
import { admitTicket } from "./ticket.ts";

/** Requests one tunnel may have running at once; more are answered with a tunnel error. */
const maxInFlight = 8;
/** A tunnel request's body, as sent and once decompressed, is capped as a published message is. */
const maxMessageBytes = publishLimits.maxMessageBytes;

/**
 * /api/Tunnel?ticket=...: a query tunnel. Binary request frames in, binary result frames
 * out. The socket is bound to the ticket's namespace and role; a message naming another namespace is refused.
 * INSERT requests go through ingest, under the same limits as publishing.
 */
export function tunnelSocket({
  ctx,
  workers,
  ingest,
  sockets,
  tunnels,
  server,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  ingest: Ingest;
  sockets: GrantedSockets;
  /** Marked connected and closed here, for ListOpenTunnels. */
  tunnels: OpenTunnels;
  server: SocketServer;
}) {
  const state = new WeakMap<object, { claims: TunnelClaims; inFlight: number; unregister: () => void }>();

  async function receive(raw: ChannelSocket, frame: RawFrame) {
    const s = state.get(raw);
    if (!s) return;
    const send = (frame: Uint8Array) => {
      if (raw.readyState === 1) raw.sendBinary(frame);
    };
    if (typeof frame === "string") {
      send(encodeResult(errorResult("", { tunnelError: "tunnel messages are binary" })));
      return;
    }
    let request: TunnelRequest;
    try {
      request = await decodeRequest(frame, maxMessageBytes);
    } catch (err) {
      const text = err instanceof TunnelProtocolError ? err.message : "malformed tunnel message";
      send(encodeResult(errorResult(err instanceof TunnelProtocolError ? err.queryId : "", { tunnelError: text })));
      return;
    }
    // Closed while decoding (its credential revoked): nothing more runs on its behalf.
    if (!state.has(raw)) return;
    const { namespaceId, orgId, role } = s.claims;
    if (request.tags.namespaceId !== undefined && request.tags.namespaceId !== namespaceId) {
      send(
        encodeResult(
          errorResult(request.queryId, {
            tunnelError: "this tunnel is bound to another namespace",
          }),
        ),
      );
      return;
    }
    if (request.tags.orgId !== undefined && request.tags.orgId !== orgId) {
      send(
        encodeResult(
          errorResult(request.queryId, {
            tunnelError: "this tunnel is bound to another org",
          }),
        ),
      );
      return;
    }
    if (s.inFlight >= maxInFlight) {
      send(
        encodeResult(
          errorResult(request.queryId, {
            tunnelError: "too many queries in flight on this tunnel",
          }),
        ),
      );
      return;
    }
    s.inFlight++;
    try {
      if (role === "INSERT" && request.want.kind === "insert") send(encodeResult(await insertEvents({ ingest, namespaceId, request })));
      else send(await workers.dispatch({ namespaceId, orgId, role, request }));
    } catch (err) {
      log.error("tunnel dispatch failed", { err, namespaceId });
      send(encodeResult(errorResult(request.queryId, { tunnelError: "internal error" })));
    } finally {
      s.inFlight--;
    }
  }

  const channel: SocketChannel<TunnelClaims> = {
    kind: "tunnel",
    // A request's body is checked against maxMessageBytes as sent and decoded (and answered); a frame of more
    // than twice that closes the socket.
    maxMessageBytes: 2 * maxMessageBytes,
    open(raw, claims) {
      const unregister = sockets.register(claims.grants, { close: (code, reason) => raw.close(code, reason) });
      state.set(raw, { claims, inFlight: 0, unregister });
      tunnels.connected(claims.tunnelId, {
        principalKey: claims.principalKey,
        namespaceId: claims.namespaceId,
        role: claims.role,
        createTimeMs: claims.createTimeMs ?? Date.now(),
      });
    },
    message: receive,
    close(raw) {
      const s = state.get(raw);
      if (!s) return;
      state.delete(raw);
      s.unregister();
      tunnels.closed(s.claims.tunnelId);
    },
  };

  return new Elysia({ name: "ws-tunnel" })
    .resolve(async ({ query, path }) => {
      if (path !== tunnelPath) return {};
      const claims = await admitTicket({
        ctx,
        channel: "Tunnel",
        ticket: query.ticket,
        redeem: (ticket) => redeemTunnelTicket(ctx.config.sessionSecret, ticket, ctx.now()),
      });
      return { tunnel: claims };
    })
    .get(tunnelPath, (c) => server.upgrade(c, channel, c.tunnel!), {
      query: t.Object({ ticket: t.Optional(t.String({ maxLength: 2048 })) }),
    });
}
