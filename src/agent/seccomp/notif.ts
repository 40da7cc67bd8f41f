import { errno, libc } from "./ffi.ts";

/** ioctl numbers of the seccomp listener (the same encoding on x86_64 and aarch64). */
const IOCTL_RECV = 0xc0502100;
const IOCTL_SEND = 0xc0182101;
const IOCTL_ID_VALID = 0x40082102;
const IOCTL_ADDFD = 0x40182103;
const FLAG_CONTINUE = 1;
const ADDFD_FLAG_SEND = 2;

/** One seccomp notification: the syscall a traced thread is blocked in. */
export type Notif = {
  /** Notification cookie (u64, kept as bigint). */
  id: bigint;
  /** Thread id of the caller in our pid namespace. */
  pid: number;
  nr: number;
  /** Syscall arguments; pointers fit in a double on every supported platform. */
  args: number[];
  /** The first argument as the C int it is for fd-taking calls (AT_FDCWD is -100; a double of the u64 loses it). */
  arg0Int: number;
};

const recvBuf = new Uint8Array(80);
const recvView = new DataView(recvBuf.buffer);

/** Blocks until a notification arrives; returns null with the errno on failure. */
export function receive(listener: number): Notif | { errno: number } {
  recvBuf.fill(0);
  if (libc.ioctl(listener, IOCTL_RECV, recvBuf) < 0) return { errno: errno() };
  const args: number[] = [];
  for (let i = 0; i < 6; i++) args.push(Number(recvView.getBigUint64(32 + i * 8, true)));
  return {
    id: recvView.getBigUint64(0, true),
    pid: recvView.getUint32(8, true),
    nr: recvView.getInt32(16, true),
    args,
    arg0Int: recvView.getInt32(32, true),
  };
}

const respBuf = new Uint8Array(24);
const respView = new DataView(respBuf.buffer);

function send(listener: number, id: bigint, val: number, error: number, flags: number): boolean {
  respView.setBigUint64(0, id, true);
  respView.setBigInt64(8, BigInt(val), true);
  respView.setInt32(16, error, true);
  respView.setUint32(20, flags, true);
  return libc.ioctl(listener, IOCTL_SEND, respBuf) === 0;
}

/** Let the kernel run the syscall as if never intercepted. */
export function replyContinue(listener: number, id: bigint): boolean {
  return send(listener, id, 0, 0, FLAG_CONTINUE);
}

export function replyValue(listener: number, id: bigint, val: number): boolean {
  return send(listener, id, val, 0, 0);
}

/** Fail the syscall with errno `err` (a positive number). */
export function replyError(listener: number, id: bigint, err: number): boolean {
  return send(listener, id, 0, -err, 0);
}

const idBuf = new BigUint64Array(1);

/** Whether the thread is still waiting in this notification (check after reading its memory). */
export function isValid(listener: number, id: bigint): boolean {
  idBuf[0] = id;
  return libc.ioctl(listener, IOCTL_ID_VALID, idBuf) === 0;
}

const addfdBuf = new Uint8Array(24);
const addfdView = new DataView(addfdBuf.buffer);

/**
 * Installs our fd `srcFd` into the caller and completes its syscall with the new fd number, atomically
 * (SECCOMP_ADDFD_FLAG_SEND, kernel 5.14+; older kernels get the two-step form). Returns the caller's fd or -errno.
 */
export function addFdAndReply(listener: number, id: bigint, srcFd: number, newFdFlags: number): number {
  if (hasAtomicAddfd) {
    const r = addFd(listener, id, srcFd, newFdFlags, ADDFD_FLAG_SEND);
    if (r >= 0 || r !== -E_INVAL) return r;
    hasAtomicAddfd = false; // kernel 5.9 to 5.13: no SECCOMP_ADDFD_FLAG_SEND
  }
  const fd = addFd(listener, id, srcFd, newFdFlags, 0);
  if (fd < 0) return fd;
  return replyValue(listener, id, fd) ? fd : -errno();
}

const E_INVAL = 22;
let hasAtomicAddfd = true;

function addFd(listener: number, id: bigint, srcFd: number, newFdFlags: number, flags: number): number {
  addfdView.setBigUint64(0, id, true);
  addfdView.setUint32(8, flags, true);
  addfdView.setUint32(12, srcFd, true);
  addfdView.setUint32(16, 0, true);
  addfdView.setUint32(20, newFdFlags, true);
  const r = libc.ioctl(listener, IOCTL_ADDFD, addfdBuf);
  return r < 0 ? -errno() : r;
}
