import { decodeSockAddr, encodeSockAddr, type SockAddr } from "./sockaddr.ts";

/** One slot per local port of the relay's connection to the program (a port is one connection at a time). */
const PORTS = 65536;
/** A sockaddr_in6 is 28 bytes. */
const ADDR_BYTES = 28;
const AF_INET = 2;
const AF_INET6 = 10;

export type InboundTableBuffer = SharedArrayBuffer;

export function newInboundTableBuffer(): InboundTableBuffer {
  return new SharedArrayBuffer(PORTS * 8 + PORTS * ADDR_BYTES * 2);
}

/**
 * The inbound connections relayed on other threads, by the local port of the relay's socket to the program: the
 * program's accept() and getpeername() (answered on the main thread) name the real client and the address it
 * reached. A relay thread writes a port's slot before it connects to the program; a slot holds a generation (0:
 * empty), the thread's index, then both addresses as sockaddrs.
 */
export class InboundTable {
  private readonly words: Int32Array;
  private readonly addrs: Uint8Array;

  constructor(buffer: InboundTableBuffer) {
    this.words = new Int32Array(buffer, 0, PORTS * 2);
    this.addrs = new Uint8Array(buffer, PORTS * 8, PORTS * ADDR_BYTES * 2);
  }

  /** Returns the slot's generation, for `clear` to leave a newer connection on the same port alone. */
  set(port: number, thread: number, peer: SockAddr, local: SockAddr): number {
    const at = port * ADDR_BYTES * 2;
    this.addrs.fill(0, at, at + ADDR_BYTES * 2);
    this.addrs.set(encodeSockAddr(peer, peer.family === 4 ? AF_INET : AF_INET6), at);
    this.addrs.set(encodeSockAddr(local, local.family === 4 ? AF_INET : AF_INET6), at + ADDR_BYTES);
    this.words[port * 2 + 1] = thread;
    const generation = ((Atomics.load(this.words, port * 2) & 0x3fffffff) + 1) | 0;
    Atomics.store(this.words, port * 2, generation);
    return generation;
  }

  clear(port: number, generation: number): void {
    Atomics.compareExchange(this.words, port * 2, generation, 0);
  }

  get(port: number): { thread: number; peer: SockAddr; local: SockAddr } | null {
    if (port < 0 || port >= PORTS || Atomics.load(this.words, port * 2) === 0) return null;
    const at = port * ADDR_BYTES * 2;
    const peer = decodeSockAddr(this.addrs.slice(at, at + ADDR_BYTES));
    const local = decodeSockAddr(this.addrs.slice(at + ADDR_BYTES, at + ADDR_BYTES * 2));
    return peer && local ? { thread: this.words[port * 2 + 1]!, peer, local } : null;
  }
}
