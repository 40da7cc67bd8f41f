import { Elysia, t } from "elysia";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { LiveHub } from "~/engines/live/hub.ts";
import type { Subscriber } from "~/engines/live/subscriber.ts";
import { AppError } from "~/lib/errors.ts";
import type { ChannelRef } from "~/lib/protocol/channel-key.ts";
import { liveSubscribePath, parseLiveClientMessage } from "~/lib/protocol/live.ts";
import type { Grant } from "~/services/access/grants.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";
import { redeemSubscriberTicket } from "~/services/live/subscriber-ticket.ts";
import type { ChannelSocket, SocketChannel, SocketServer } from "./socket-server.ts";
import { admitTicket } from "./ticket.ts";

type Connection = { sub: Subscriber; expiryTimer: ReturnType<typeof setTimeout> | null; unregister: () => void };

/** Longest single setTimeout; a link further out re-arms. */
const maxTimer = 2 ** 31 - 1;

/**
 * /api/LiveSubscribe: the live view's socket. `?ticket=` (from JoinSubscriber) watches a namespace;
 * `?link_id=` watches a shared link (the id is the capability) until it expires. See lib/protocol/live.ts.
 */
export function subscribeSocket({
  ctx,
  hub,
  sockets,
  server,
}: {
  ctx: ServiceContext;
  hub: LiveHub;
  sockets: GrantedSockets;
  server: SocketServer;
}) {
  const connections = new WeakMap<object, Connection>();

  async function resolveChannel(query: {
    ticket?: string;
    link_id?: string;
  }): Promise<{ ref: ChannelRef; expiresAt: Date | null; grants: Grant[] }> {
    if (query.link_id !== undefined && query.ticket === undefined) {
      const link = await getLink({ ctx, linkId: query.link_id });
      if (link.isExpired) throw new AppError("NOT_FOUND", "this link has expired");
      return { ref: { kind: "link", linkId: link.linkId }, expiresAt: link.expiresAt, grants: [] };
    }
    const claims = await admitTicket({
      ctx,
      channel: "LiveSubscribe",
      ticket: query.ticket,
      redeem: (ticket) => redeemSubscriberTicket(ctx.config.sessionSecret, ticket, ctx.now()),
    });
    return { ref: { kind: "namespace", namespaceId: claims.namespaceId }, expiresAt: null, grants: claims.grants };
  }

  function armExpiry(ws: ChannelSocket, sub: Subscriber, expiresAt: Date): ReturnType<typeof setTimeout> {
    const wait = expiresAt.getTime() - ctx.now().getTime();
    return setTimeout(
      () => {
        const conn = connections.get(ws);
        if (!conn || sub.isClosed) return;
        if (expiresAt.getTime() > ctx.now().getTime()) {
          conn.expiryTimer = armExpiry(ws, sub, expiresAt);
          return;
        }
        sub.hub.expire(sub);
      },
      Math.max(0, Math.min(wait, maxTimer)),
    );
  }

  type Live = { ref: ChannelRef; expiresAt: Date | null; grants: Grant[] };
  const channel: SocketChannel<Live> = {
    kind: "subscribe",
    // parseLiveClientMessage bounds a config more tightly; this only keeps bigger frames from reaching it.
    maxMessageBytes: 512 * 1024,
    open(socket, { ref, expiresAt, grants }) {
      const sub = hub.subscribe(
        ref,
        {
          send: (data) => socket.sendText(data),
          bufferedAmount: () => socket.getBufferedAmount(),
          close: (code, reason) => socket.close(code, reason),
          terminate: () => socket.terminate(),
        },
        { expiresAt, address: socket.data.address },
      );
      const unregister = sockets.register(grants, { close: (code, reason) => socket.close(code, reason) });
      connections.set(socket, { sub, expiryTimer: expiresAt ? armExpiry(socket, sub, expiresAt) : null, unregister });
    },
    message(socket, frame) {
      const conn = connections.get(socket);
      const parsed = typeof frame === "string" ? parseLiveClientMessage(frame) : null;
      if (conn && parsed) conn.sub.setConfig(parsed);
    },
    drain(socket) {
      connections.get(socket)?.sub.drain();
    },
    close(socket) {
      const conn = connections.get(socket);
      if (!conn) return;
      connections.delete(socket);
      if (conn.expiryTimer) clearTimeout(conn.expiryTimer);
      conn.unregister();
      conn.sub.close();
    },
  };

  return new Elysia({ name: "ws-subscribe" })
    .resolve(async ({ query, path }) => {
      if (path !== liveSubscribePath) return {};
      const live = await resolveChannel(query);
      if (!hub.hasRoomFor(live.ref)) throw new AppError("RATE_LIMITED", "too many viewers on this live view right now");
      return { live };
    })
    .get(liveSubscribePath, (c) => server.upgrade(c, channel, c.live!), {
      query: t.Object({ ticket: t.Optional(t.String({ maxLength: 1024 })), link_id: t.Optional(t.String({ maxLength: 200 })) }),
    });
}
