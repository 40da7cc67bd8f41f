import { liveSubscribePath } from "~/lib/protocol/live.ts";

/**
 * The socket URL handed to the frame in its fragment (#url=<encoded>): a JoinSubscriber websocketUrl or a
 * shared link's URL. Only the live path of THIS origin is accepted (a crafted fragment cannot point the
 * frame at another server), and the browser's own host is used so a proxy or port mapping cannot split them.
 */
export function liveSocketUrlFromFragment(hash: string, location: { protocol: string; host: string }): string | null {
  const raw = new URLSearchParams(hash.replace(/^#/, "")).get("url");
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (!["ws:", "wss:", "http:", "https:"].includes(url.protocol)) return null;
  if (url.pathname !== liveSubscribePath) return null;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${url.pathname}${url.search}`;
}

/** The shared link id in a link socket URL, if it is one. */
export function linkIdOf(socketUrl: string): string | null {
  try {
    return new URL(socketUrl).searchParams.get("link_id");
  } catch {
    return null;
  }
}
