import { constants } from "node:os";
import type { Socket, TCPSocketListener } from "bun";
import { legOptions } from "../relay/leg-options.ts";
import { nowMicros } from "../relay/observer.ts";
import { type LegData, Pipe } from "../relay/pipe.ts";
import { decodeSockAddr, encodeSockAddr, formatSockAddr, fromHostPort, type SockAddr, unmapV4 } from "../relay/sockaddr.ts";
import { TlsGate } from "../relay/tls-gate.ts";
import {
  E,
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
import { type Context, processOf } from "./context.ts";
import { asProgram, credentialsFor } from "./credentials.ts";
import { retire } from "./inbound.ts";

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
    legOptions(
      { hostname, port: 0 },
      {
        open(socket: Socket<LegData>) {
          const entry = ctx.outbound.get(socket.remotePort);
          if (!entry) {
            socket.terminate();
            return;
          }
          if (entry.gate) entry.gate.attachClient(socket);
          else entry.pipe.attach("client", socket);
        },
      },
    );
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

/**
 * Requests `pid` received but has not been seen accepting (a native accept) are in flight now: shows them to the tracer
 * first, so a call it makes (a new connection, or a statement on a pooled one) can name its parent request.
 */
export function releaseInboundOf(ctx: Context, pid: number): void {
  for (const pipe of ctx.deferredInbound) if (pipe.info.pid === pid) pipe.release(pid);
  ctx.threads?.releaseProcess(pid);
}

export function handleConnect(ctx: Context, relay: OutboundRelay, m: ConnectMsg): void {
  const pid = processOf(m.pid);
  releaseInboundOf(ctx, pid);
  const inode = socketInode(m.fd);
  const pending = inode ? pendingDials.get(inode) : undefined;
  if (pending) {
    libc.close(m.fd);
    if (isValid(ctx.listener, pending.id))
      replyError(ctx.listener, m.id, E.EALREADY); // a second thread, as the kernel says
    else pending.adopt(m); // the same connect, restarted after a signal
    return;
  }
  // A socket the program bound before connecting (a chosen source address) is a client, not a listener.
  const bound = ctx.takeovers.get(inode);
  if (bound && !bound.server && bound.threadKey === null) retire(ctx, bound);
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

  // The program's socket is connected to the relay first, before any answer: if its thread is interrupted
  // and it polls the socket (as CPython and Go do after EINTR), it finds a connecting or connected socket,
  // as it would without tracing.
  const forget = () => setTimeout(() => ctx.outbound.get(programPort)?.pipe === pipe && ctx.outbound.delete(programPort), 5000).unref();
  const pipe: Pipe = new Pipe(
    {
      id: ctx.nextConnectionId(),
      direction: "outbound",
      clientAddr: "",
      serverAddr: formatSockAddr(shownPeer),
      pid,
      startedAt,
      connectedAt: 0,
    },
    ctx.observer,
    forget,
  );
  const relayAddr: SockAddr =
    dialFamily === AF_INET6 && relay.v6
      ? { family: 6, ip: "::1", port: relay.v6.port }
      : { family: 4, ip: "127.0.0.1", port: relay.v4.port };
  const plugged = connectTo(m.fd, encodeSockAddr(relayAddr, m.domain));
  const programLocal = plugged === 0 || plugged === E.EINPROGRESS ? localAddr(m.fd) : null;
  if (!programLocal) {
    replyContinue(ctx.listener, m.id); // cannot relay this one: the kernel connects it, untraced
    libc.close(m.fd);
    return;
  }
  const programPort = programLocal.port;
  // Its first bytes decide: TLS to decrypt, a CONNECT to a proxy (the tunnel is a connection of its own), or plain.
  // The dial is made with the program's rights (its socket's owner owns ours), as are the TLS relay's and tunnels' own.
  const credentials = credentialsFor(m.pid, m.fd, false);
  const withRights = credentials ? <T>(work: () => T) => asProgram(credentials, work) : undefined;
  const gate = new TlsGate(pipe, ctx.tls, ctx.observer, { hostname: dialAddr.ip, port: dialAddr.port, withRights }, forget, {
    nextConnectionId: ctx.nextConnectionId,
  });
  ctx.outbound.set(programPort, { pipe, gate, realPeer: shownPeer, realLocal: null });
  ctx.stats.outbound++;

  let state: "holding" | "in-progress" | "done" = "holding";
  let notifId = m.id;
  let timer: Timer | null = null;
  const settle = () => {
    state = "done";
    if (timer) clearTimeout(timer);
    pendingDials.delete(inode);
    libc.close(m.fd);
  };

  const onDialed = (socket: Socket<LegData>) => {
    if (wantsKeepAlive) socket.setKeepAlive(true);
    const local = fromHostPort(socket.localAddress, socket.localPort);
    pipe.info.clientAddr = formatSockAddr(local);
    pipe.info.connectedAt = nowMicros();
    const entry = ctx.outbound.get(programPort);
    if (entry?.pipe === pipe) entry.realLocal = local;
    if (state === "holding") {
      settle();
      replyValue(ctx.listener, notifId, 0);
    }
    const noDelay = wantsNoDelay || isLoopback(dialAddr);
    if (gate) gate.attachServer(socket, noDelay);
    else pipe.attach("server", socket, noDelay);
  };
  const onFailed = (error: unknown) => {
    if (state === "holding") {
      // Undo the plug (connect with AF_UNSPEC disconnects), so the socket is unconnected as after a failed dial.
      connectTo(m.fd, new Uint8Array(16));
      settle();
      if (ctx.outbound.get(programPort)?.pipe === pipe) ctx.outbound.delete(programPort);
      replyError(ctx.listener, notifId, errnoOf(error));
      (gate ?? pipe).fail("connect failed");
      return;
    }
    state = "done";
    const reason = `connect: ${formatSockAddr(shownPeer)}: ${String((error as { code?: string })?.code ?? error)}`;
    if (gate) gate.fail(reason);
    else pipe.fail(reason);
  };

  const holdNonBlocking = () => {
    timer = setTimeout(() => {
      timer = null;
      if (state !== "holding") return;
      settle();
      state = "in-progress";
      replyError(ctx.listener, notifId, E.EINPROGRESS);
    }, NONBLOCKING_HOLD_MS);
  };
  if (inode) {
    pendingDials.set(inode, {
      get id() {
        return notifId;
      },
      adopt(next: ConnectMsg) {
        notifId = next.id;
        if (timer) clearTimeout(timer);
        if (isNonBlocking) holdNonBlocking();
      },
    });
  }
  if (isNonBlocking) holdNonBlocking();

  asProgram(credentials, () =>
    Bun.connect<LegData>(
      legOptions(
        { hostname: dialAddr.ip, port: dialAddr.port },
        {
          open: onDialed,
          connectError(_socket: Socket<LegData>, error: unknown) {
            onFailed(error);
          },
        },
      ),
    ),
  ).catch(onFailed);
}
