import type { ServerWebSocket } from "bun";
import { Elysia, t } from "elysia";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { ChannelRef, LiveHub, Subscriber } from "~/engines/live/hub.ts";
import { AppError } from "~/lib/errors.ts";
import { liveSubscribePath, parseLiveClientMessage } from "~/lib/protocol/live.ts";
import type { Grant } from "~/services/access/grants.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";
import { redeemSubscriberTicket } from "~/services/live/subscriber-ticket.ts";
import { isFirstUseEverywhere } from "~/services/tickets/signed-ticket.ts";
import { takeRawFrames } from "./raw-frames.ts";

type Connection = { sub: Subscriber; expiryTimer: ReturnType<typeof setTimeout> | null; unregister: () => void };

/** Longest single setTimeout; a link further out re-arms. */
const maxTimer = 2 ** 31 - 1;

/**
 * /api/LiveSubscribe: the live view's socket. `?ticket=` (from JoinSubscriber) watches a namespace;
 * `?link_id=` watches a shared link (the id is the capability) until it expires. See lib/protocol/live.ts.
 */
export function subscribeSocket({ ctx, hub, sockets }: { ctx: ServiceContext; hub: LiveHub; sockets: GrantedSockets }) {
  const connections = new WeakMap<object, Connection>();

  async function resolveChannel(query: {
    ticket?: string;
    link_id?: string;
  }): Promise<{ ref: ChannelRef; expiresAt: Date | null; grants: Grant[] }> {
    if (query.ticket) {
      let claims = redeemSubscriberTicket(ctx.config.sessionSecret, query.ticket, ctx.now());
      if (claims && !(await isFirstUseEverywhere(query.ticket, ctx.spendTicketEverywhere))) claims = null;
      if (!claims) throw new AppError("UNAUTHORIZED", "live ticket invalid, used or expired: call JoinSubscriber again");
      return { ref: { kind: "namespace", namespaceId: claims.namespaceId }, expiresAt: null, grants: claims.grants };
    }
    if (query.link_id) {
      const link = await getLink({ ctx, linkId: query.link_id });
      if (link.isExpired) throw new AppError("NOT_FOUND", "this link has expired");
      return { ref: { kind: "link", linkId: link.linkId }, expiresAt: link.expiresAt, grants: [] };
    }
    throw new AppError("BAD_REQUEST", "ticket or link_id required");
  }

  function armExpiry(ws: ServerWebSocket<unknown>, sub: Subscriber, expiresAt: Date): ReturnType<typeof setTimeout> {
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

  return new Elysia({ name: "ws-subscribe" })
    .resolve(async ({ query }) => {
      const live = await resolveChannel(query);
      if (!hub.hasRoomFor(live.ref)) throw new AppError("RATE_LIMITED", "too many viewers on this live view right now");
      return { live };
    })
    .ws(liveSubscribePath, {
      query: t.Object({ ticket: t.Optional(t.String({ maxLength: 1024 })), link_id: t.Optional(t.String({ maxLength: 200 })) }),
      open(ws) {
        const raw = ws.raw as ServerWebSocket<unknown>;
        const { ref, expiresAt, grants } = ws.data.live;
        const sub = hub.subscribe(
          ref,
          {
            send: (data) => raw.sendText(data),
            bufferedAmount: () => raw.getBufferedAmount(),
            close: (code, reason) => raw.close(code, reason),
          },
          { expiresAt },
        );
        const unregister = sockets.register(grants, { close: (code, reason) => raw.close(code, reason) });
        connections.set(raw, { sub, expiryTimer: expiresAt ? armExpiry(raw, sub, expiresAt) : null, unregister });
        // Frames as they arrived: parseLiveClientMessage bounds a frame's size before it parses it, which it
        // could not do after Elysia had parsed every text frame that looks like JSON (up to Bun's 16 MiB).
        takeRawFrames(raw, (frame) => {
          const conn = connections.get(raw);
          const parsed = typeof frame === "string" ? parseLiveClientMessage(frame) : null;
          if (conn && parsed) conn.sub.setConfig(parsed);
        });
      },
      drain(ws) {
        connections.get(ws.raw)?.sub.drain();
      },
      close(ws) {
        const conn = connections.get(ws.raw);
        if (!conn) return;
        connections.delete(ws.raw);
        if (conn.expiryTimer) clearTimeout(conn.expiryTimer);
        conn.unregister();
        conn.sub.close();
      },
    });
}
