import { readFileSync } from "node:fs";
import type { Socket } from "bun";
import { relayInboundConnection } from "../relay/inbound-connection.ts";
import { legOptions } from "../relay/leg-options.ts";
import type { LegData } from "../relay/pipe.ts";
import type { RelayThreads } from "../relay/relay-threads.ts";
import { decodeSockAddr, encodeSockAddr, formatSockAddr, type SockAddr } from "../relay/sockaddr.ts";
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
import { AF_INET6, bindTo, localAddr, newSocket, socketInode, writeAddrResult } from "../seccomp/sockets.ts";
import { type Context, processOf, type Takeover } from "./context.ts";
import { asProgram, credentialsFor } from "./credentials.ts";
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
  // Our socket is made and bound with the program's rights: its owner decides SO_REUSEPORT groups, its capabilities
  // low ports.
  const credentials = credentialsFor(pid, fd, true);
  const owned = asProgram(credentials, () => {
    const made = newSocket(domain);
    return made < 0 ? -errno() : made;
  });
  if (owned < 0) return -owned;
  for (const opt of [SO_REUSEADDR, SO_REUSEPORT]) {
    const value = getIntOpt(fd, SOL_SOCKET, opt);
    if (value > 0) setIntOpt(owned, SOL_SOCKET, opt, value);
  }
  const isReusePort = getIntOpt(fd, SOL_SOCKET, SO_REUSEPORT) > 0;
  const isV6Only = domain === AF_INET6 && getIntOpt(fd, IPPROTO_IPV6, IPV6_V6ONLY) === 1;
  if (domain === AF_INET6) setIntOpt(owned, IPPROTO_IPV6, IPV6_V6ONLY, isV6Only ? 1 : 0);
  const bindOwned = () =>
    sharesPortWithThreads(ctx, requested, isReusePort) ? E.EADDRINUSE : asProgram(credentials, () => bindTo(owned, requestedBytes));
  let err = bindOwned();
  if (err === E.EADDRINUSE && retireDead(ctx, requested.port)) err = bindOwned();
  if (err) {
    libc.close(owned);
    return err;
  }
  // Relay threads each listen on a socket of their own on this address (SO_REUSEPORT, set after the program's own
  // bind decided as the kernel would): the kernel spreads connections over them.
  if (ctx.threads) setIntOpt(owned, SOL_SOCKET, SO_REUSEPORT, 1);
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
    threadKey: null,
    isReusePort,
    credentials,
    parked: [],
    pid: processOf(pid),
    isRetired: false,
  };
  ctx.takeovers.set(takeover.inode, takeover);
  return takeover;
}

function isWildcard(ip: string): boolean {
  return ip === "0.0.0.0" || ip === "::";
}

/**
 * With relay threads our listening sockets carry SO_REUSEPORT whatever the program asked, so the kernel would let a
 * second bind of their address through: refuse it as it would have without them (both sockets must ask for
 * SO_REUSEPORT). A port-0 bind never conflicts.
 */
function sharesPortWithThreads(ctx: Context, requested: SockAddr, isReusePort: boolean): boolean {
  if (!ctx.threads || requested.port === 0) return false;
  for (const t of ctx.takeovers.values()) {
    if (t.requested.port !== requested.port) continue;
    const overlaps = t.requested.ip === requested.ip || isWildcard(t.requested.ip) || isWildcard(requested.ip);
    if (overlaps && !(isReusePort && t.isReusePort)) return true;
  }
  return false;
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
  if (!takeover.server && takeover.threadKey === null) startOwnedListener(ctx, takeover, m.backlog);
  replyValue(ctx.listener, m.id, 0);
}

let lastThreadKey = 0;

/** One more listening socket on the takeover's address (SO_REUSEPORT), for a relay thread; -1 if it cannot be made. */
function reusePortSocket(takeover: Takeover, backlog: number): number {
  const fd = asProgram(takeover.credentials, () => newSocket(takeover.domain));
  if (fd < 0) return -1;
  setIntOpt(fd, SOL_SOCKET, SO_REUSEADDR, getIntOpt(takeover.ownedFd, SOL_SOCKET, SO_REUSEADDR) > 0 ? 1 : 0);
  setIntOpt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
  if (takeover.domain === AF_INET6)
    setIntOpt(fd, IPPROTO_IPV6, IPV6_V6ONLY, getIntOpt(takeover.ownedFd, IPPROTO_IPV6, IPV6_V6ONLY) === 1 ? 1 : 0);
  const bound = asProgram(takeover.credentials, () => bindTo(fd, encodeSockAddr(takeover.requested, takeover.domain)));
  if (bound !== 0 || libc.listen(fd, backlog) < 0) {
    libc.close(fd);
    return -1;
  }
  return fd;
}

/** The relay threads accept on the owned socket and on one more socket each (all SO_REUSEPORT on one address). */
function startThreadListeners(ctx: Context, threads: RelayThreads, takeover: Takeover, backlog: number): void {
  const fds = [takeover.ownedFd];
  for (let i = 1; i < threads.count; i++) {
    const fd = reusePortSocket(takeover, backlog);
    if (fd < 0) break;
    fds.push(fd);
  }
  takeover.threadKey = ++lastThreadKey;
  ctx.threadTakeovers.set(takeover.threadKey, takeover);
  const { domain, hidden, hiddenEncoded, pid } = takeover;
  threads.listen(takeover.threadKey, fds, { domain, hidden, hiddenEncoded, pid });
}

function startOwnedListener(ctx: Context, takeover: Takeover, backlog: number): void {
  if (libc.listen(takeover.ownedFd, Math.max(backlog, 511)) < 0) return;
  if (ctx.threads) {
    startThreadListeners(ctx, ctx.threads, takeover, Math.max(backlog, 511));
    ctx.stats.intercepted++;
    ctx.say(`intercepted ${formatSockAddr(takeover.requested)}`);
    return;
  }
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

/** A client reached an address we own, on the main thread's listener. */
function relayInbound(ctx: Context, takeover: Takeover, client: Socket<LegData>): void {
  ctx.stats.inbound++;
  relayInboundConnection(takeover, client, {
    observer: ctx.observer,
    nextConnectionId: ctx.nextConnectionId,
    register: (relayPort, peer, local, pipe) => ctx.inbound.set(relayPort, { peer, local, takeover, pipe }),
    unregister: (relayPort, pipe) => {
      if (ctx.inbound.get(relayPort)?.pipe === pipe) ctx.inbound.delete(relayPort);
    },
    deferred: ctx.deferredInbound,
    onConnected: () => serveParked(ctx, takeover),
    onRefused: (reset) => {
      reset();
      retire(ctx, takeover);
    },
  });
}

/** Stops owning an address whose program socket is gone, so the program (or another) can bind it again. */
export function retire(ctx: Context, takeover: Takeover): void {
  if (takeover.isRetired) return;
  takeover.isRetired = true;
  ctx.takeovers.delete(takeover.inode);
  if (takeover.threadKey !== null) {
    // The threads close their sockets, the owned one included, before this returns: the address is free again.
    ctx.threads?.stop(takeover.threadKey);
    ctx.threadTakeovers.delete(takeover.threadKey);
  } else if (takeover.server) takeover.server.stop(true);
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
    if ((t.server || t.threadKey !== null) && !alive.has(t.inode)) retire(ctx, t);
    t.parked = t.parked.filter((p) => {
      if (isValid(ctx.listener, p.id)) return true;
      libc.close(p.fd);
      return false;
    });
    syncParked(ctx, t);
  }
}

export function handleAccept(ctx: Context, m: AcceptMsg): boolean {
  const takeover = ctx.takeovers.get(socketInode(m.fd));
  if (!takeover) {
    replyContinue(ctx.listener, m.id);
    return false;
  }
  const isParked = tryAccept(ctx, takeover, m);
  syncParked(ctx, takeover);
  return isParked;
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
  const shown = relayPeer ? acceptedFrom(ctx, relayPeer, m.pid) : null;
  if (shown) writeAddrResult(m.pid, m.addrPtr, m.lenPtr, encodeSockAddr(shown, takeover.domain));
  const installed = addFdAndReply(ctx.listener, m.id, accepted, (m.flags & SOCK_CLOEXEC) !== 0 ? O_CLOEXEC : 0);
  libc.close(accepted);
  if (installed < 0) ctx.stats.lostAccepts++;
  return false;
}

/** The client a connection from the relay stands for (its tap told which process accepted it); the relay's own address when unknown. */
function acceptedFrom(ctx: Context, relayPeer: SockAddr, pid: number): SockAddr {
  const entry = ctx.inbound.get(relayPeer.port);
  if (entry) {
    entry.pipe.release(processOf(pid));
    return entry.peer;
  }
  const threaded = ctx.threads?.lookup(relayPeer.port);
  if (!threaded) return relayPeer;
  ctx.threads!.release(relayPeer.port, threaded.thread, processOf(pid));
  return threaded.peer;
}

/** Relay threads say when a connection is up only while accept() calls are parked. */
export function syncParked(ctx: Context, takeover: Takeover): void {
  if (takeover.threadKey !== null) ctx.threads?.setParked(takeover.threadKey, takeover.parked.length);
}

export function serveParked(ctx: Context, takeover: Takeover): void {
  serveParkedNow(ctx, takeover);
  syncParked(ctx, takeover);
}

function serveParkedNow(ctx: Context, takeover: Takeover): void {
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
