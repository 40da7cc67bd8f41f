import type { Socket } from "bun";
import { E, libc } from "../seccomp/ffi.ts";
import { bindTo, connectTo, localAddr, newSocket } from "../seccomp/sockets.ts";
import { legOptions } from "./leg-options.ts";
import { type ConnectionObserver, nowMicros } from "./observer.ts";
import { type ForwardCounter, type LegData, legHandlers, Pipe } from "./pipe.ts";
import { encodeSockAddr, formatSockAddr, fromHostPort, type SockAddr } from "./sockaddr.ts";

const LOOPBACK4: SockAddr = { family: 4, ip: "127.0.0.1", port: 0 };
const LOOPBACK6: SockAddr = { family: 6, ip: "::1", port: 0 };

/** The program's listening socket as a relay thread needs it: where the program really listens, and who bound it. */
export type InboundTarget = { domain: number; hidden: SockAddr; hiddenEncoded: Uint8Array; pid: number };

/** What the thread relaying a connection keeps about it (the main thread's maps, or another thread's shared table). */
export type InboundHooks = {
  observer: ConnectionObserver | null;
  nextConnectionId(): number;
  /** The relay's socket to the program has local port `relayPort`: the program's accept will name this connection. */
  register(relayPort: number, peer: SockAddr, local: SockAddr, pipe: Pipe): void;
  /** Kept a little after close for a late getpeername; a reused port may already belong to a newer connection. */
  unregister(relayPort: number, pipe: Pipe): void;
  deferred: Set<Pipe>;
  /** A relay thread's count of request bytes forwarded before they are parsed (the main thread's lookups wait on it). */
  forwarding?: ForwardCounter;
  /** Both legs are up: a blocking accept() waiting for one can be served. */
  onConnected(): void;
  /** Nothing listens on the program's port any more; `reset` resets the client (now, or a moment later). */
  onRefused(reset: () => void): void;
};

/** A client reached an address we own: connect to the program's hidden port from a port we know first. */
export function relayInboundConnection(target: InboundTarget, client: Socket<LegData>, hooks: InboundHooks): void {
  const startedAt = nowMicros();
  const peer = fromHostPort(client.remoteAddress, client.remotePort);
  const local = fromHostPort(client.localAddress, client.localPort);
  let relayPort = -1;
  const pipe: Pipe = new Pipe(
    {
      id: hooks.nextConnectionId(),
      direction: "inbound",
      clientAddr: formatSockAddr(peer),
      serverAddr: formatSockAddr(local),
      pid: target.pid,
      startedAt,
      connectedAt: 0,
    },
    hooks.observer,
    () => setTimeout(() => hooks.unregister(relayPort, pipe), 5000).unref(),
    { deferTap: true, onRelease: (released) => hooks.deferred.delete(released), forwarding: hooks.forwarding },
  );
  if (pipe.isDeferred) hooks.deferred.add(pipe);
  pipe.attach("client", client);
  const fd = newSocket(target.domain);
  const loopback = target.hidden.family === 6 && target.hidden.ip === "::1" ? LOOPBACK6 : LOOPBACK4;
  if (fd < 0 || bindTo(fd, encodeSockAddr(loopback, target.domain)) !== 0) {
    if (fd >= 0) libc.close(fd);
    pipe.fail("relay socket");
    return;
  }
  relayPort = localAddr(fd)?.port ?? -1;
  hooks.register(relayPort, peer, local, pipe);
  const err = connectTo(fd, target.hiddenEncoded);
  const reset = () => pipe.fail("program stopped listening");
  if (err && err !== E.EINPROGRESS) {
    libc.close(fd);
    hooks.unregister(relayPort, pipe);
    if (err === E.ECONNREFUSED) hooks.onRefused(reset);
    else reset();
    return;
  }
  const refused = () => {
    hooks.unregister(relayPort, pipe);
    hooks.onRefused(reset);
  };
  // Bun may open a socket made from a connecting fd before the connection is up: a refusal then comes as its error.
  const unlessRefused =
    (then: (socket: Socket<LegData>, error: Error) => void) =>
    (socket: Socket<LegData>, error: Error): void => {
      if ((error as { code?: string } | undefined)?.code === "ECONNREFUSED") refused();
      else then(socket, error);
    };
  Bun.connect<LegData>(
    legOptions(
      { fd },
      {
        open(server: Socket<LegData>) {
          pipe.attach("server", server);
          hooks.onConnected();
        },
        connectError: refused,
        error: unlessRefused(legHandlers.error!),
        close: unlessRefused(legHandlers.close as (socket: Socket<LegData>, error: Error) => void),
      },
    ),
  ).catch(() => pipe.fail("connect"));
}
