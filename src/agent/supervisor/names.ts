import { encodeSockAddr, type SockAddr } from "../relay/sockaddr.ts";
import type { NameMsg } from "../seccomp/messages.ts";
import { replyContinue, replyValue } from "../seccomp/notif.ts";
import { isLoopback, localAddr, peerAddr, socketInode, writeAddrResult } from "../seccomp/sockets.ts";
import { type Context, processOf } from "./context.ts";

/**
 * getsockname/getpeername as the program would see them without tracing: its listener reports the
 * address it asked for (with the real port), an accepted connection its real client and the address the
 * client reached, an outbound connection its real peer. Anything else is the kernel's own answer.
 */
export function handleName(ctx: Context, m: NameMsg): void {
  const answer = resolve(ctx, m);
  if (!answer) {
    replyContinue(ctx.listener, m.id);
    return;
  }
  writeAddrResult(m.pid, m.addrPtr, m.lenPtr, encodeSockAddr(answer, m.domain));
  replyValue(ctx.listener, m.id, 0);
}

function resolve(ctx: Context, m: NameMsg): SockAddr | null {
  const takeover = ctx.takeovers.get(socketInode(m.fd));
  if (takeover) return m.kind === "getsockname" ? takeover.requested : null;
  const peer = peerAddr(m.fd);
  if (!peer || !isLoopback(peer)) return null;
  const inbound = ctx.inbound.get(peer.port);
  if (inbound) {
    inbound.pipe.release(processOf(m.pid));
    return m.kind === "getpeername" ? inbound.peer : inbound.local;
  }
  const threaded = ctx.threads?.lookup(peer.port);
  if (threaded) {
    ctx.threads!.release(peer.port, threaded.thread, processOf(m.pid));
    return m.kind === "getpeername" ? threaded.peer : threaded.local;
  }
  const local = localAddr(m.fd);
  const outbound = local ? ctx.outbound.get(local.port) : undefined;
  if (!outbound) return null;
  if (m.kind === "getpeername") return outbound.realPeer;
  return outbound.realLocal ? { ...outbound.realLocal, port: local!.port } : null;
}
