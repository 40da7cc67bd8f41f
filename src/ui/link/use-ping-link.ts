import { useEffect } from "react";
import { linkPingPath } from "~/lib/protocol/live.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";

export const PING_MS = 1000;
export const RECONNECT_MS = 1000;

/**
 * The viewer's presence on a shared link: WebSocket /api/PingLink?link_id=..., 'ping' every second; after a
 * close the socket is cleared and reopened 1 second later.
 */
export function usePingLink(linkId: string, isActive: boolean) {
  useEffect(() => {
    if (!isActive) return;
    let ws: WebSocket | null = null;
    let ping: ReturnType<typeof setInterval> | undefined;
    let reopen: ReturnType<typeof setTimeout> | undefined;
    let isStopped = false;
    const open = () => {
      ws = new WebSocket(websocketUrl(window.location.origin, `${linkPingPath}?link_id=${encodeURIComponent(linkId)}`));
      ws.onopen = () => {
        ping = setInterval(() => {
          if (ws?.readyState === WebSocket.OPEN) ws.send("ping");
        }, PING_MS);
      };
      ws.onclose = () => {
        clearInterval(ping);
        ws = null;
        if (!isStopped) reopen = setTimeout(open, RECONNECT_MS);
      };
    };
    open();
    return () => {
      isStopped = true;
      clearInterval(ping);
      clearTimeout(reopen);
      ws?.close(1000);
    };
  }, [linkId, isActive]);
}
