import type { Socket, TCPSocketListener } from "bun";
import { constants } from "node:os";
import { nowMicros } from "../relay/observer.ts";
import { type LegData, legHandlers, Pipe } from "../relay/pipe.ts";
import { decodeSockAddr, encodeSockAddr, formatSockAddr, fromHostPort, type SockAddr, unmapV4 } from "../relay/sockaddr.ts";
import {
  E,
  errno,
  F_GETFL,
  getIntOpt,
  IPPROTO_IPV6,
  IPPROTO_TCP,
  IPV6_V6ONLY,
  libc,
  O_NONBLOCK,
  SO_KEEPALIVE,
  SOL_SOCKET,
  TCP_CLOSE,
  TCP_NODELAY,
  tcpState,
} from "../seccomp/ffi.ts";
import type { ConnectMsg } from "../seccomp/messages.ts";
import { isValid, replyContinue, replyError, replyValue } from "../seccomp/notif.ts";
import { AF_INET, AF_INET6, connectTo, isLoopback, localAddr, socketInode } from "../seccomp/sockets.ts";
import { retire } from "./inbound.ts";
import { type Context, processOf } from "./context.ts";


/**
 * How long a non-blocking connect() is held while the real dial runs. Within it the program gets the
 * kernel's own answer (success, or ECONNREFUSED and friends); past it, EINPROGRESS, and a dial that then
 * fails resets the connection.
 */
const NONBLOCKING_HOLD_MS = 3;

export type OutboundRelay = { v4: TCPSocketListener<LegData>; v6: TCPSocketListener<LegData> | null };

/** The listeners program sockets are connected to; the accepted leg is matched by its source port. */
export function startOutboundRelay(ctx: Context): OutboundRelay {
  const options = (hostname: string) =>
    ({
      hostname,
      port: 0,
      allowHalfOpen: true,
      socket: {
        ...legHandlers,
        open(socket: Socket<LegData>) {
          const entry = ctx.outbound.get(socket.remotePort);
          if (!entry) {
            socket.terminate();
            return;
          }
          entry.pipe.attach("client", socket);
        },
      },
    }) as unknown as Bun.TCPSocketListenOptions<LegData>;
  const v4 = Bun.listen<LegData>(options("127.0.0.1"));
  let v6: TCPSocketListener<LegData> | null = null;
  try {
    v6 = Bun.listen<LegData>(options("::1"));
  } catch {}
  return { v4, v6 };
}

function errnoOf(error: unknown): number {
  const code = error && typeof error === "object" && "code" in error ? String((error as { code: unknown }).code) : "";
  const value = (constants.errno as Record<string, number>)[code];
  return value ?? E.ECONNREFUSED;
}

/** Dials in flight by program socket (inode): a connect() restarted after a signal takes over its dial. */
const pendingDials = new Map<string, { id: bigint; adopt(m: ConnectMsg): void }>();

export function handleConnect(ctx: Context, relay: OutboundRelay, m: ConnectMsg): void {
  const pid = processOf(m.pid);
  // Requests this process received but has not been seen accepting (a native accept) are in flight now:
  // show them to the tracer first, so this call can name its parent request.
  for (const pipe of ctx.deferredInbound) if (pipe.info.pid === pid) pipe.release(pid);
  const inode = socketInode(m.fd);
  const pending = inode ? pendingDials.get(inode) : undefined;
  if (pending) {
    libc.close(m.fd);
    if (isValid(ctx.listener, pending.id)) replyError(ctx.listener, m.id, E.EALREADY); // a second thread, as the kernel says
    else pending.adopt(m); // the same connect, restarted after a signal
    return;
  }
  // A socket the program bound before connecting (a chosen source address) is a client, not a listener.
  const bound = ctx.takeovers.get(inode);
  if (bound && !bound.server) retire(ctx, bound);
  const dest = decodeSockAddr(m.addr);
  if (!dest || dest.port === 0 || tcpState(m.fd) !== TCP_CLOSE) {
    replyContinue(ctx.listener, m.id); // the kernel answers: EISCONN, EALREADY, EINVAL, ...
    libc.close(m.fd);
    return;
  }
  const v4 = unmapV4(dest.ip);
  const isV6Only = m.domain === AF_INET6 && getIntOpt(m.fd, IPPROTO_IPV6, IPV6_V6ONLY) === 1;
  if ((m.domain === AF_INET && dest.family === 6) || (v4 && dest.family === 6 && isV6Only)) {
    replyContinue(ctx.listener, m.id);
    libc.close(m.fd);
    return;
  }
  const dialFamily = v4 ? AF_INET : AF_INET6;
  const dialAddr: SockAddr = v4 ? { family: 4, ip: v4, port: dest.port } : dest;
  const startedAt = nowMicros();
  const wantsNoDelay = getIntOpt(m.fd, IPPROTO_TCP, TCP_NODELAY) > 0;
  const wantsKeepAlive = getIntOpt(m.fd, SOL_SOCKET, SO_KEEPALIVE) > 0;
  const isNonBlocking = (libc.fcntl(m.fd, F_GETFL, 0) & O_NONBLOCK) !== 0;
  const shownPeer: SockAddr = dest;
  let state: "holding" | "in-progress" | "done" = "holding";
  let pipe: Pipe | null = null;
  let upstream: Socket<LegData> | null = null;
  let timer: Timer | null = null;

  const makePipe = (): Pipe => {
    const info = {
      id: ctx.nextConnectionId(),
      direction: "outbound" as const,
      clientAddr: "",
      serverAddr: formatSockAddr(shownPeer),
      pid,
      startedAt,
      connectedAt: 0,
    };
    // Kept a little after close for a late getpeername; a reused port may already belong to a newer connection.
    const created: Pipe = new Pipe(info, ctx.observer, () =>
      setTimeout(() => ctx.outbound.get(programPort)?.pipe === created && ctx.outbound.delete(programPort), 5000).unref(),
    );
    ctx.stats.outbound++;
    return created;
  };
  let programPort = -1;

  /** Connects the program's socket to our relay listener; returns 0, EINPROGRESS, or an errno. */
  const plugProgram = (): number => {
    const relayPort = dialFamily === AF_INET6 && relay.v6 ? relay.v6.port : relay.v4.port;
    const relayAddr: SockAddr =
      dialFamily === AF_INET6 && relay.v6 ? { family: 6, ip: "::1", port: relayPort } : { family: 4, ip: "127.0.0.1", port: relayPort };
    pipe = makePipe();
    const result = connectTo(m.fd, encodeSockAddr(relayAddr, m.domain));
    const local = localAddr(m.fd);
    if (local && (result === 0 || result === E.EINPROGRESS)) {
      programPort = local.port;
      ctx.outbound.set(programPort, { pipe, realPeer: shownPeer, realLocal: null });
    }
    libc.close(m.fd);
    return result;
  };

  const onDialed = (socket: Socket<LegData>) => {
    upstream = socket;
    if (wantsKeepAlive) socket.setKeepAlive(true);
    if (timer) clearTimeout(timer);
    if (state === "holding") {
      state = "done";
      pendingDials.delete(inode);
      // The caller left (killed, or interrupted and not yet back): leave its socket untouched.
      if (!isValid(ctx.listener, notifId)) {
        libc.close(m.fd);
        socket.terminate();
        return;
      }
      const result = plugProgram();
      if (result !== 0 && result !== E.EINPROGRESS) {
        replyError(ctx.listener, notifId, result);
        socket.terminate();
        return;
      }
      setClientAddr(socket);
      if (result === 0) replyValue(ctx.listener, notifId, 0);
      else replyError(ctx.listener, notifId, result);
    }
    setClientAddr(socket);
    pipe?.attach("server", socket, wantsNoDelay || isLoopback(dialAddr));
  };
  const setClientAddr = (socket: Socket<LegData>) => {
    if (!pipe || pipe.info.clientAddr) return;
    const local = fromHostPort(socket.localAddress, socket.localPort);
    pipe.info.clientAddr = formatSockAddr(local);
    pipe.info.connectedAt = nowMicros();
    const entry = ctx.outbound.get(programPort);
    if (entry) entry.realLocal = local;
  };
  const onFailed = (error: unknown) => {
    if (timer) clearTimeout(timer);
    if (state === "holding") {
      state = "done";
      pendingDials.delete(inode);
      libc.close(m.fd);
      replyError(ctx.listener, notifId, errnoOf(error));
      return;
    }
    pipe?.fail(`connect: ${formatSockAddr(shownPeer)}: ${String((error as { code?: string })?.code ?? error)}`);
  };

  let notifId = m.id;
  const holdNonBlocking = () => {
    timer = setTimeout(() => {
      timer = null;
      if (state !== "holding") return;
      state = "in-progress";
      pendingDials.delete(inode);
      const result = plugProgram();
      if (result === 0 || result === E.EINPROGRESS) replyError(ctx.listener, notifId, E.EINPROGRESS);
      else replyError(ctx.listener, notifId, result);
    }, NONBLOCKING_HOLD_MS);
  };
  if (inode) pendingDials.set(inode, {
    get id() {
      return notifId;
    },
    adopt(next: ConnectMsg) {
      notifId = next.id;
      if (timer) clearTimeout(timer);
      if (isNonBlocking) holdNonBlocking();
    },
  });
  if (isNonBlocking) holdNonBlocking();

  Bun.connect<LegData>({
    hostname: dialAddr.ip,
    port: dialAddr.port,
    allowHalfOpen: true,
    socket: {
      ...legHandlers,
      open: onDialed,
      connectError(_socket: Socket<LegData>, error: unknown) {
        onFailed(error);
      },
    },
  } as unknown as Bun.TCPSocketConnectOptions<LegData>).catch(onFailed);
  void upstream;
}
