import { dlopen, ptr, read } from "bun:ffi";

/**
 * libc through bun:ffi: the few calls the supervisor needs. Loaded once per thread (the notification
 * Worker has its own copy), so `errno()` reads that thread's errno.
 */
const symbols = {
  syscall: { args: ["i64", "i64", "i64", "i64", "i64", "i64", "i64"], returns: "i64" },
  prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" },
  getppid: { args: [], returns: "i32" },
  ioctl: { args: ["i32", "u64", "ptr"], returns: "i32" },
  socket: { args: ["i32", "i32", "i32"], returns: "i32" },
  bind: { args: ["i32", "ptr", "u32"], returns: "i32" },
  listen: { args: ["i32", "i32"], returns: "i32" },
  connect: { args: ["i32", "ptr", "u32"], returns: "i32" },
  accept4: { args: ["i32", "ptr", "ptr", "i32"], returns: "i32" },
  getsockname: { args: ["i32", "ptr", "ptr"], returns: "i32" },
  getpeername: { args: ["i32", "ptr", "ptr"], returns: "i32" },
  getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" },
  setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" },
  close: { args: ["i32"], returns: "i32" },
  fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
  poll: { args: ["ptr", "u64", "i32"], returns: "i32" },
  process_vm_readv: { args: ["i32", "ptr", "u64", "ptr", "u64", "u64"], returns: "i64" },
  process_vm_writev: { args: ["i32", "ptr", "u64", "ptr", "u64", "u64"], returns: "i64" },
  execve: { args: ["ptr", "ptr", "ptr"], returns: "i32" },
  signal: { args: ["i32", "u64"], returns: "u64" },
  sigprocmask: { args: ["i32", "ptr", "ptr"], returns: "i32" },
  waitpid: { args: ["i32", "ptr", "i32"], returns: "i32" },
  dup2: { args: ["i32", "i32"], returns: "i32" },
  __errno_location: { args: [], returns: "ptr" },
} as const;

function openLibc() {
  let lastError: unknown;
  for (const name of ["libc.so.6", "libc.so"]) {
    try {
      return dlopen(name, symbols);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

const lib = openLibc();

export const libc = lib.symbols;
const errnoPtr = lib.symbols.__errno_location();

export function errno(): number {
  return errnoPtr ? read.i32(errnoPtr, 0) : 0;
}

const isArm64 = process.arch === "arm64";

/** Syscall numbers (x86_64 / aarch64); pidfd_* and io_uring_setup share the unified numbers. */
export const NR = isArm64
  ? {
      socket: 198,
      bind: 200,
      listen: 201,
      accept: 202,
      connect: 203,
      getsockname: 204,
      getpeername: 205,
      accept4: 242,
      execve: 221,
      execveat: 281,
      seccomp: 277,
      io_uring_setup: 425,
      pidfd_open: 434,
      pidfd_getfd: 438,
      openat: 56,
      /** aarch64 has no open(2): -1 never matches a syscall number. */
      open: -1,
      setgroups: 159,
      setfsuid: 151,
      setfsgid: 152,
      capget: 90,
      capset: 91,
    }
  : {
      socket: 41,
      bind: 49,
      listen: 50,
      accept: 43,
      connect: 42,
      getsockname: 51,
      getpeername: 52,
      accept4: 288,
      execve: 59,
      execveat: 322,
      seccomp: 317,
      io_uring_setup: 425,
      pidfd_open: 434,
      pidfd_getfd: 438,
      openat: 257,
      open: 2,
      setgroups: 116,
      setfsuid: 122,
      setfsgid: 123,
      capget: 125,
      capset: 126,
    };

export const AUDIT_ARCH = isArm64 ? 0xc00000b7 : 0xc000003e;

export const E = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  ECHILD: 10,
  EBADF: 9,
  EAGAIN: 11,
  EACCES: 13,
  EINVAL: 22,
  ENOSYS: 38,
  ENOTSOCK: 88,
  EADDRINUSE: 98,
  EADDRNOTAVAIL: 99,
  ENETUNREACH: 101,
  ECONNRESET: 104,
  EISCONN: 106,
  ENOTCONN: 107,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EHOSTUNREACH: 113,
  EALREADY: 114,
  EINPROGRESS: 115,
} as const;

export const AF_INET = 2;
export const AF_INET6 = 10;
export const SOCK_STREAM = 1;
export const SOCK_NONBLOCK = 0o4000;
export const SOCK_CLOEXEC = 0o2000000;
export const O_NONBLOCK = 0o4000;
export const O_CLOEXEC = 0o2000000;
export const F_GETFL = 3;
export const SOL_SOCKET = 1;
export const SO_REUSEADDR = 2;
export const SO_TYPE = 3;
export const SO_ERROR = 4;
export const SO_KEEPALIVE = 9;
export const SO_REUSEPORT = 15;
export const SO_PROTOCOL = 38;
export const SO_DOMAIN = 39;
export const IPPROTO_TCP = 6;
export const IPPROTO_IPV6 = 41;
export const IPPROTO_MPTCP = 262;
export const IPV6_V6ONLY = 26;
export const TCP_NODELAY = 1;
export const TCP_INFO = 11;
export const TCP_CLOSE = 7;

export function pidfdOpen(pid: number, flags = 0): number {
  const fd = Number(libc.syscall(NR.pidfd_open, pid, flags, 0, 0, 0, 0));
  return fd;
}

export function pidfdGetfd(pidfd: number, targetFd: number): number {
  return Number(libc.syscall(NR.pidfd_getfd, pidfd, targetFd, 0, 0, 0, 0));
}

const optBuf = new Int32Array(1);
const optLen = new Uint32Array(1);

export function getIntOpt(fd: number, level: number, name: number): number {
  optBuf[0] = 0;
  optLen[0] = 4;
  if (libc.getsockopt(fd, level, name, optBuf, optLen) < 0) return -1;
  return optBuf[0]!;
}

export function setIntOpt(fd: number, level: number, name: number, value: number): boolean {
  optBuf[0] = value;
  return libc.setsockopt(fd, level, name, optBuf, 4) === 0;
}

const tcpInfo = new Uint8Array(232);
const tcpInfoLen = new Uint32Array(1);

/** The kernel's TCP state of a socket (TCP_CLOSE = 7 for a fresh or failed one), or -1. */
export function tcpState(fd: number): number {
  tcpInfoLen[0] = tcpInfo.length;
  if (libc.getsockopt(fd, IPPROTO_TCP, TCP_INFO, tcpInfo, tcpInfoLen) < 0) return -1;
  return tcpInfo[0]!;
}

const pollFd = new Uint8Array(8);
const pollView = new DataView(pollFd.buffer);

/** Whether fd is readable right now (poll with a zero timeout). */
export function isReadable(fd: number): boolean {
  pollView.setInt32(0, fd, true);
  pollView.setInt16(4, 1, true); // POLLIN
  pollView.setInt16(6, 0, true);
  return libc.poll(pollFd, 1, 0) > 0 && (pollView.getInt16(6, true) & 1) !== 0;
}

/**
 * Whether fd reports POLLHUP right now. On a seccomp listener that means no task uses the filter any more (Linux
 * 5.8+): every traced process has exited, and none can ever join again.
 */
export function isHungUp(fd: number): boolean {
  pollView.setInt32(0, fd, true);
  pollView.setInt16(4, 1, true);
  pollView.setInt16(6, 0, true);
  return libc.poll(pollFd, 1, 0) > 0 && (pollView.getInt16(6, true) & 0x10) !== 0;
}

const iovLocal = new BigUint64Array(2);
const iovRemote = new BigUint64Array(2);

/** Reads len bytes at addr in process pid; null when the process or mapping is gone. */
export function readMemory(pid: number, addr: number, len: number): Uint8Array | null {
  const out = new Uint8Array(len);
  iovLocal[0] = BigInt(ptr(out));
  iovLocal[1] = BigInt(len);
  iovRemote[0] = BigInt(addr);
  iovRemote[1] = BigInt(len);
  const n = Number(libc.process_vm_readv(pid, iovLocal, 1, iovRemote, 1, 0));
  return n === len ? out : null;
}

export function writeMemory(pid: number, addr: number, data: Uint8Array): boolean {
  iovLocal[0] = BigInt(ptr(data));
  iovLocal[1] = BigInt(data.length);
  iovRemote[0] = BigInt(addr);
  iovRemote[1] = BigInt(data.length);
  return Number(libc.process_vm_writev(pid, iovLocal, 1, iovRemote, 1, 0)) === data.length;
}

export function cString(s: string): Uint8Array {
  return new TextEncoder().encode(`${s}\0`);
}
