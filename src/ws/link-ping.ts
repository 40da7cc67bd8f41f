import { Elysia, t } from "elysia";
import { AppError } from "~/lib/errors.ts";
import { linkPingPath } from "~/lib/protocol/live.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";
import type { SocketChannel, SocketServer } from "./socket-server.ts";

/**
 * /api/PingLink?link_id=: the /link page's presence socket. The client sends "ping" every second and gets
 * "pong"; unknown and expired links are refused at the upgrade, and the socket closes when the link expires.
 * Each open page counts against its link's cap as well as its address's.
 */
export function linkPingSocket({ ctx, server }: { ctx: ServiceContext; server: SocketServer }) {
  const timers = new WeakMap<object, ReturnType<typeof setTimeout>>();
  const channel: SocketChannel<{ expiresAt: Date }> = {
    kind: "linkPing",
    maxMessageBytes: 64,
    open(socket, { expiresAt }) {
      const wait = expiresAt.getTime() - ctx.now().getTime();
      if (wait < 2 ** 31)
        timers.set(
          socket,
          setTimeout(() => socket.close(4410, "link expired"), Math.max(0, wait)),
        );
    },
    message(socket, frame) {
      if (frame === "ping") socket.sendText("pong");
    },
    close(socket) {
      const timer = timers.get(socket);
      if (timer) clearTimeout(timer);
    },
  };
  return new Elysia({ name: "ws-link-ping" })
    .resolve(async ({ query, path }) => {
      if (path !== linkPingPath) return {};
      const link = await getLink({ ctx, linkId: query.link_id ?? "" });
      if (link.isExpired) throw new AppError("NOT_FOUND", "this link has expired");
      return { link };
    })
    .get(linkPingPath, (c) => server.upgrade(c, channel, { expiresAt: c.link!.expiresAt }, { linkId: c.link!.linkId }), {
      query: t.Object({ link_id: t.Optional(t.String({ maxLength: 200 })) }),
    });
}
