import { readlinkSync } from "node:fs";
import { decodeSockAddr, type SockAddr } from "../relay/sockaddr.ts";
import { AF_INET, AF_INET6, errno, libc, readMemory, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_STREAM, writeMemory } from "./ffi.ts";

/** Socket helpers over raw fds (our own, or dups of the program's taken with pidfd_getfd). */
const nameBuf = new Uint8Array(128);
const nameLen = new Uint32Array(1);

export function localAddr(fd: number): SockAddr | null {
  nameLen[0] = nameBuf.length;
  if (libc.getsockname(fd, nameBuf, nameLen) < 0) return null;
  return decodeSockAddr(nameBuf.slice(0, nameLen[0]));
}

export function peerAddr(fd: number): SockAddr | null {
  nameLen[0] = nameBuf.length;
  if (libc.getpeername(fd, nameBuf, nameLen) < 0) return null;
  return decodeSockAddr(nameBuf.slice(0, nameLen[0]));
}

/** "socket:[123]" for a socket fd; the identity of the socket across dups and forks. */
export function socketInode(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "";
  }
}

export function newSocket(domain: number): number {
  return libc.socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/** bind(2); returns 0 or a positive errno. */
export function bindTo(fd: number, addr: Uint8Array): number {
  return libc.bind(fd, addr, addr.length) === 0 ? 0 : errno();
}

/** connect(2); returns 0, or a positive errno (EINPROGRESS included). */
export function connectTo(fd: number, addr: Uint8Array): number {
  return libc.connect(fd, addr, addr.length) === 0 ? 0 : errno();
}

export function isLoopback(addr: SockAddr): boolean {
  return addr.ip.startsWith("127.") || addr.ip === "::1" || addr.ip.startsWith("::ffff:127.");
}

export { AF_INET, AF_INET6 };

/**
 * Writes a socket address result into the caller's (addr, *addrlen) buffers the way the kernel does:
 * truncated to the caller's length, and *addrlen set to the full length. False if its memory is gone.
 */
export function writeAddrResult(pid: number, addrPtr: number, lenPtr: number, encoded: Uint8Array): boolean {
  if (!addrPtr || !lenPtr) return true;
  const lenBytes = readMemory(pid, lenPtr, 4);
  if (!lenBytes) return false;
  const room = new DataView(lenBytes.buffer).getUint32(0, true);
  const n = Math.min(room, encoded.length);
  if (n > 0 && !writeMemory(pid, addrPtr, encoded.subarray(0, n))) return false;
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, encoded.length, true);
  return writeMemory(pid, lenPtr, out);
}
