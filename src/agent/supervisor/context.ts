import { readFileSync } from "node:fs";
import type { TCPSocketListener } from "bun";
import type { ConnectionObserver } from "../relay/observer.ts";
import type { LegData, Pipe } from "../relay/pipe.ts";
import type { RelayThreads } from "../relay/relay-threads.ts";
import type { SockAddr } from "../relay/sockaddr.ts";
import type { TlsGate } from "../relay/tls-gate.ts";
import type { AcceptMsg } from "../seccomp/messages.ts";
import type { TlsInterception } from "../tls/interception.ts";
import type { Credentials } from "./credentials.ts";

/** A program listening socket the supervisor took over: it owns `requested`, the program listens on `hidden`. */
export type Takeover = {
  inode: string;
  /** What the program asked for, with the real port when it asked for port 0. */
  requested: SockAddr;
  /** AF_INET / AF_INET6 of the program's socket. */
  domain: number;
  ownedFd: number;
  hidden: SockAddr;
  hiddenEncoded: Uint8Array;
  server: TCPSocketListener<LegData> | null;
  /** With relay threads: the key they know this listener by (they accept on it instead of `server`). */
  threadKey: number | null;
  /** The program asked for SO_REUSEPORT on its socket. */
  isReusePort: boolean;
  /** The binding thread's credentials, when they differ from ours: the relay threads' sockets are made with them too. */
  credentials: Credentials | null;
  /** Blocking accept() calls waiting for a connection. */
  parked: AcceptMsg[];
  pid: number;
  isRetired: boolean;
};

/** A connection the relay made to a program's hidden port, by the relay socket's local port. */
export type InboundEntry = { peer: SockAddr; local: SockAddr; takeover: Takeover; pipe: Pipe };

/** A program socket the supervisor connected to the relay, by that socket's local port. */
export type OutboundEntry = {
  pipe: Pipe;
  /** With TLS interception on: holds the connection until its first bytes say whether it is TLS. */
  gate: TlsGate | null;
  realPeer: SockAddr;
  realLocal: SockAddr | null;
};

export type Context = {
  listener: number;
  observer: ConnectionObserver | null;
  /** Outbound TLS interception; null when off (`--tls off`). */
  tls: TlsInterception | null;
  say: (line: string) => void;
  takeovers: Map<string, Takeover>;
  inbound: Map<number, InboundEntry>;
  outbound: Map<number, OutboundEntry>;
  /** Inbound connections not yet shown to the observer (waiting for the program's accept). */
  deferredInbound: Set<Pipe>;
  nextConnectionId: () => number;
  /** Relay threads accepting inbound connections (`--relay-threads` over 1); null: the main thread does. */
  threads: RelayThreads | null;
  /** Takeovers by their threadKey. */
  threadTakeovers: Map<number, Takeover>;
  stats: { intercepted: number; inbound: number; outbound: number; refusedIoUring: number; lostAccepts: number };
};

/** The thread-group id (process id) of a thread; the thread id itself when /proc says nothing. */
export function processOf(tid: number): number {
  try {
    const status = readFileSync(`/proc/${tid}/status`, "utf8");
    const m = /^Tgid:\s*(\d+)/m.exec(status);
    return m ? Number(m[1]) : tid;
  } catch {
    return tid;
  }
}
