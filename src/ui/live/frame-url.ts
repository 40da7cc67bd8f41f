import { liveSocketUrl, liveSubscribePath } from "~/lib/protocol/live.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";

/**
 * The socket URL handed to the frame in its fragment (#url=<encoded>): a JoinSubscriber websocketUrl or a
 * shared link's URL (lib/protocol/live.ts maps both). Only the live path is accepted, and the browser's own
 * host is used: a crafted fragment cannot point the frame at another server, and a proxy or port mapping
 * in front of the server cannot split the page from its socket.
 */
export function liveSocketUrlFromFragment(hash: string, location: { protocol: string; host: string }): string | null {
  const raw = new URLSearchParams(hash.replace(/^#/, "")).get("url");
  if (!raw) return null;
  const socket = liveSocketUrl(raw);
  if (!socket) return null;
  const url = new URL(socket);
  if (url.pathname !== liveSubscribePath) return null;
  return websocketUrl(`${location.protocol}//${location.host}`, `${url.pathname}${url.search}`);
}
