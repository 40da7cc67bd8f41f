import { Elysia, t } from "elysia";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";
import { getLink } from "~/services/links/get-link.ts";

/**
 * /api/PingLink?link_id=: the /link page's presence socket. The client sends "ping" every second and gets
 * "pong"; unknown and expired links are refused at the upgrade, and the socket closes when the link expires.
 */
export function linkPingSocket({ ctx }: { ctx: ServiceContext }) {
  const timers = new WeakMap<object, ReturnType<typeof setTimeout>>();
  return new Elysia({ name: "ws-link-ping" })
    .resolve(async ({ query }) => {
      const link = await getLink({ ctx, linkId: query.link_id ?? "" });
      if (link.isExpired) throw new AppError("NOT_FOUND", "this link has expired");
      return { link };
    })
    .ws("/api/PingLink", {
      query: t.Object({ link_id: t.Optional(t.String({ maxLength: 200 })) }),
      open(ws) {
        const wait = ws.data.link.expiresAt.getTime() - ctx.now().getTime();
        const raw = ws.raw;
        if (wait < 2 ** 31)
          timers.set(
            raw,
            setTimeout(() => raw.close(4410, "link expired"), Math.max(0, wait)),
          );
      },
      message(ws, message) {
        if (message === "ping") ws.raw.sendText("pong");
      },
      close(ws) {
        const timer = timers.get(ws.raw);
        if (timer) clearTimeout(timer);
      },
    });
}
