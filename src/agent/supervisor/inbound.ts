import { readFileSync } from "node:fs";
import type { Socket } from "bun";
import { legOptions } from "../relay/leg-options.ts";
import { nowMicros } from "../relay/observer.ts";
import { type LegData, Pipe } from "../relay/pipe.ts";
import { decodeSockAddr, encodeSockAddr, formatSockAddr, fromHostPort, type SockAddr } from "../relay/sockaddr.ts";
import {
  E,
  errno,
  F_GETFL,
  getIntOpt,
  IPPROTO_IPV6,
  IPV6_V6ONLY,
  isReadable,
  libc,
  O_CLOEXEC,
  O_NONBLOCK,
  SO_REUSEADDR,
  SO_REUSEPORT,
  SOCK_CLOEXEC,
  SOCK_NONBLOCK,
  SOL_SOCKET,
  setIntOpt,
} from "../seccomp/ffi.ts";
import type { AcceptMsg, BindMsg, ListenMsg } from "../seccomp/messages.ts";
import { addFdAndReply, isValid, replyContinue, replyError, replyValue } from "../seccomp/notif.ts";
import { AF_INET, AF_INET6, bindTo, connectTo, localAddr, newSocket, socketInode, writeAddrResult } from "../seccomp/sockets.ts";
import { type Context, processOf, type Takeover } from "./context.ts";
import { listeningInodes } from "./listening.ts";

const LOOPBACK4: SockAddr = { family: 4, ip: "127.0.0.1", port: 0 };
const LOOPBACK6: SockAddr = { family: 6, ip: "::1", port: 0 };

/**
 * Moves a program socket that asks for `requestedBytes` to a loopback port and binds the requested
 * address on a socket of our own, copying the options that decide whether that bind succeeds.
 * Returns the takeover, or a positive errno to fail the program's bind with.
 */
function takeOver(ctx: Context, fd: number, domain: number, requestedBytes: Uint8Array, pid: number): Takeover | number {
  const requested = decodeSockAddr(requestedBytes);
  if (!requested) return E.EINVAL;
  const owned = newSocket(domain);
  if (owned < 0) return errno();
  for (const opt of [SO_REUSEADDR, SO_REUSEPORT]) {
    const value = getIntOpt(fd, SOL_SOCKET, opt);
    if (value > 0) setIntOpt(owned, SOL_SOCKET, opt, value);
  }
  const isV6Only = domain === AF_INET6 && getIntOpt(fd, IPPROTO_IPV6, IPV6_V6ONLY) === 1;
  if (domain === AF_INET6) setIntOpt(owned, IPPROTO_IPV6, IPV6_V6ONLY, isV6Only ? 1 : 0);
  let err = bindTo(owned, requestedBytes);
  if (err === E.EADDRINUSE && retireDead(ctx, requested.port)) err = bindTo(owned, requestedBytes);
  if (err) {
    libc.close(owned);
    return err;
  }
  let hiddenErr = bindTo(fd, encodeSockAddr(domain === AF_INET6 ? LOOPBACK6 : LOOPBACK4, domain));
  if (hiddenErr && domain === AF_INET6 && !isV6Only) hiddenErr = bindTo(fd, encodeSockAddr(LOOPBACK4, AF_INET6));
  const hidden = hiddenErr ? null : localAddr(fd);
  const real = localAddr(owned);
  if (!hidden || !real) {
    libc.close(owned);
    return hiddenErr || E.EADDRNOTAVAIL;
  }
  const takeover: Takeover = {
    inode: socketInode(fd),
    requested: { ...requested, port: real.port },
    domain,
    ownedFd: owned,
    hidden,
    hiddenEncoded: encodeSockAddr(hidden, domain),
    server: null,
    parked: [],
    pid: processOf(pid),
    isRetired: false,
  };
  ctx.takeovers.set(takeover.inode, takeover);
  return takeover;
}

export function handleBind(ctx: Context, m: BindMsg): void {
  const current = localAddr(m.fd);
  if (current && current.port !== 0) {
    replyContinue(ctx.listener, m.id); // already bound: the kernel's EINVAL
    return;
  }
  const result = takeOver(ctx, m.fd, m.domain, m.addr, m.pid);
  if (typeof result === "number") replyError(ctx.listener, m.id, result);
  else replyValue(ctx.listener, m.id, 0);
}

export function handleListen(ctx: Context, m: ListenMsg): void {
  let takeover = ctx.takeovers.get(socketInode(m.fd));
  if (!takeover) {
    const current = localAddr(m.fd);
    if (!current || current.port !== 0) {
      // Bound before we could see it (inherited from an untraced parent): leave it alone, and say so.
      if (current) ctx.say(`not intercepting ${formatSockAddr(current)} (the socket was bound before tracing began)`);
      replyContinue(ctx.listener, m.id);
      return;
    }
    // listen() on an unbound socket binds the wildcard address with an ephemeral port.
    const any: SockAddr = m.domain === AF_INET6 ? { family: 6, ip: "::", port: 0 } : { family: 4, ip: "0.0.0.0", port: 0 };
    const result = takeOver(ctx, m.fd, m.domain, encodeSockAddr(any, m.domain), m.pid);
    if (typeof result === "number") {
      replyError(ctx.listener, m.id, result);
      return;
    }
    takeover = result;
  }
  if (libc.listen(m.fd, m.backlog) < 0) {
    replyError(ctx.listener, m.id, errno());
    return;
  }
  if (!takeover.server) startOwnedListener(ctx, takeover, m.backlog);
  replyValue(ctx.listener, m.id, 0);
}

function startOwnedListener(ctx: Context, takeover: Takeover, backlog: number): void {
  if (libc.listen(takeover.ownedFd, Math.max(backlog, 511)) < 0) return;
  takeover.server = Bun.listen<LegData>(
    legOptions(
      { fd: takeover.ownedFd },
      {
        open(client: Socket<LegData>) {
          relayInbound(ctx, takeover, client);
        },
      },
    ),
  );
  ctx.stats.intercepted++;
  ctx.say(`intercepted ${formatSockAddr(takeover.requested)}`);
}

/** A client reached an address we own: connect to the program's hidden port from a port we know first. */
function relayInbound(ctx: Context, takeover: Takeover, client: Socket<LegData>): void {
  const startedAt = nowMicros();
  const peer = fromHostPort(client.remoteAddress, client.remotePort);
  const local = fromHostPort(client.localAddress, client.localPort);
  const pipe = new Pipe(
    {
      id: ctx.nextConnectionId(),
      direction: "inbound",
      clientAddr: formatSockAddr(peer),
      serverAddr: formatSockAddr(local),
      pid: takeover.pid,
      startedAt,
      connectedAt: 0,
    },
    ctx.observer,
    // Kept a little after close for a late getpeername; a reused port may already belong to a newer connection.
    () => setTimeout(() => ctx.inbound.get(relayPort)?.pipe === pipe && ctx.inbound.delete(relayPort), 5000).unref(),
    { deferTap: true, onRelease: (released) => ctx.deferredInbound.delete(released) },
  );
  if (pipe.isDeferred) ctx.deferredInbound.add(pipe);
  pipe.attach("client", client);
  ctx.stats.inbound++;
  const fd = newSocket(takeover.domain);
  let relayPort = -1;
  const loopback = takeover.hidden.family === 6 && takeover.hidden.ip === "::1" ? LOOPBACK6 : LOOPBACK4;
  if (fd < 0 || bindTo(fd, encodeSockAddr(loopback, takeover.domain)) !== 0) {
    if (fd >= 0) libc.close(fd);
    pipe.fail("relay socket");
    return;
  }
  relayPort = localAddr(fd)?.port ?? -1;
  ctx.inbound.set(relayPort, { peer, local, takeover, pipe });
  const err = connectTo(fd, takeover.hiddenEncoded);
  if (err && err !== E.EINPROGRESS) {
    libc.close(fd);
    if (ctx.inbound.get(relayPort)?.pipe === pipe) ctx.inbound.delete(relayPort);
    pipe.fail("program stopped listening");
    if (err === E.ECONNREFUSED) retire(ctx, takeover);
    return;
  }
  Bun.connect<LegData>(
    legOptions(
      { fd },
      {
        open(server: Socket<LegData>) {
          pipe.attach("server", server);
          serveParked(ctx, takeover);
        },
        connectError() {
          if (ctx.inbound.get(relayPort)?.pipe === pipe) ctx.inbound.delete(relayPort);
          pipe.fail("program stopped listening");
          retire(ctx, takeover);
        },
      },
    ),
  ).catch(() => pipe.fail("connect"));
}

/** Stops owning an address whose program socket is gone, so the program (or another) can bind it again. */
export function retire(ctx: Context, takeover: Takeover): void {
  if (takeover.isRetired) return;
  takeover.isRetired = true;
  ctx.takeovers.delete(takeover.inode);
  if (takeover.server) takeover.server.stop(true);
  else libc.close(takeover.ownedFd);
  for (const parked of takeover.parked) libc.close(parked.fd);
  takeover.parked = [];
}

/** Retires takeovers of `port` whose program socket no longer exists; true if any was. */
function retireDead(ctx: Context, port: number): boolean {
  const alive = liveInodes();
  let didRetire = false;
  for (const t of [...ctx.takeovers.values()]) {
    if (t.requested.port === port && !alive.has(t.inode)) {
      retire(ctx, t);
      didRetire = true;
    }
  }
  return didRetire;
}

/** Inodes of TCP sockets in this network namespace that are bound or listening. */
export function liveInodes(): Set<string> {
  const out = new Set<string>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[9]) out.add(`socket:[${cols[9]}]`);
    }
  }
  return out;
}

/** Drops takeovers whose listening program socket has been closed (checked every few seconds). */
export function sweepTakeovers(ctx: Context): void {
  if (ctx.takeovers.size === 0) return;
  // Only listening program sockets are checked here, so the listening table is enough.
  const alive = listeningInodes() ?? liveInodes();
  for (const t of [...ctx.takeovers.values()]) {
    if (t.server && !alive.has(t.inode)) retire(ctx, t);
    t.parked = t.parked.filter((p) => {
      if (isValid(ctx.listener, p.id)) return true;
      libc.close(p.fd);
      return false;
    });
  }
}

export function handleAccept(ctx: Context, m: AcceptMsg): boolean {
  const takeover = ctx.takeovers.get(socketInode(m.fd));
  if (!takeover) {
    replyContinue(ctx.listener, m.id);
    return false;
  }
  return tryAccept(ctx, takeover, m);
}

/** Returns true when the message's fd is still in use (parked). */
function tryAccept(ctx: Context, takeover: Takeover, m: AcceptMsg): boolean {
  if (!isReadable(m.fd)) {
    if ((libc.fcntl(m.fd, F_GETFL, 0) & O_NONBLOCK) !== 0) {
      replyError(ctx.listener, m.id, E.EAGAIN);
      return false;
    }
    takeover.parked.push(m);
    return true;
  }
  const addrBuf = new Uint8Array(128);
  const lenBuf = new Uint32Array([128]);
  const accepted = libc.accept4(m.fd, addrBuf, lenBuf, (m.flags & SOCK_NONBLOCK) | SOCK_CLOEXEC);
  if (accepted < 0) {
    const err = errno();
    if (err === E.EAGAIN && (libc.fcntl(m.fd, F_GETFL, 0) & O_NONBLOCK) === 0) {
      takeover.parked.push(m);
      return true;
    }
    replyError(ctx.listener, m.id, err);
    return false;
  }
  const relayPeer = decodeSockAddr(addrBuf.subarray(0, lenBuf[0]));
  const entry = relayPeer ? ctx.inbound.get(relayPeer.port) : undefined;
  entry?.pipe.release(processOf(m.pid));
  const shown = entry?.peer ?? relayPeer;
  if (shown) writeAddrResult(m.pid, m.addrPtr, m.lenPtr, encodeSockAddr(shown, takeover.domain));
  const installed = addFdAndReply(ctx.listener, m.id, accepted, (m.flags & SOCK_CLOEXEC) !== 0 ? O_CLOEXEC : 0);
  libc.close(accepted);
  if (installed < 0) ctx.stats.lostAccepts++;
  return false;
}

function serveParked(ctx: Context, takeover: Takeover): void {
  while (takeover.parked.length > 0) {
    const m = takeover.parked[0]!;
    if (!isValid(ctx.listener, m.id)) {
      takeover.parked.shift();
      libc.close(m.fd);
      continue;
    }
    if (!isReadable(m.fd)) return;
    takeover.parked.shift();
    if (tryAccept(ctx, takeover, m)) {
      // Parked again (another accept took the connection): back to the front, FIFO order kept.
      takeover.parked.pop();
      takeover.parked.unshift(m);
      return;
    }
    libc.close(m.fd);
  }
}
