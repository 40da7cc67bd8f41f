/// <reference lib="webworker" />
import { closeSync, openSync, writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { errorDetail } from "../../lib/errors.ts";
import {
  AF_INET,
  AF_INET6,
  E,
  errno,
  getIntOpt,
  IPPROTO_MPTCP,
  IPPROTO_TCP,
  isHungUp,
  libc,
  NR,
  pidfdGetfd,
  pidfdOpen,
  readMemory,
  SO_DOMAIN,
  SO_PROTOCOL,
  SO_TYPE,
  SOCK_STREAM,
  SOL_SOCKET,
} from "./ffi.ts";
import type { WorkerInit, WorkerMessage } from "./messages.ts";
import { addFdAndReply, isValid, type Notif, receive, replyContinue, replyError } from "./notif.ts";

/**
 * The notification loop: blocks in SECCOMP_IOCTL_NOTIF_RECV on this Worker thread, never on the event
 * loop. It answers what needs no state at once (not a TCP socket: CONTINUE; io_uring_setup: ENOSYS) and
 * hands TCP work to the supervisor with a dup of the caller's socket; it never waits for network I/O.
 */
const { listener, control, trustBundle } = workerData as WorkerInit;
const bundlePaths = new Set(trustBundle?.paths ?? []);
/** The longest path worth reading: no bundle path is longer. */
const longestPath = Math.max(0, ...[...bundlePaths].map((p) => Buffer.byteLength(p)));
const O_CLOEXEC = 0o2000000;
const PAGE = 4096;
const flags = new Int32Array(control);
const post = (message: WorkerMessage) => parentPort!.postMessage(message);
const PIDFD_THREAD = 0o200;

/** pidfds by thread id; a pidfd names one task, so a stale entry fails with ESRCH and is reopened. */
const pidfds = new Map<number, number>();

function openPidfd(tid: number): number {
  let fd = pidfdOpen(tid, PIDFD_THREAD);
  if (fd < 0) fd = pidfdOpen(tid, 0);
  if (fd >= 0) {
    if (pidfds.size > 4096) sweepPidfds();
    pidfds.set(tid, fd);
  }
  return fd;
}

function sweepPidfds(): void {
  for (const fd of pidfds.values()) libc.close(fd);
  pidfds.clear();
}

let hasReportedPermission = false;
let hasReportedIoUring = false;

/** A dup of the caller's fd in our process, or -1. */
function takeFd(tid: number, fd: number): number {
  for (let attempt = 0; attempt < 2; attempt++) {
    let pidfd = pidfds.get(tid);
    if (pidfd === undefined || attempt === 1) {
      if (pidfd !== undefined) {
        libc.close(pidfd);
        pidfds.delete(tid);
      }
      pidfd = openPidfd(tid);
      if (pidfd < 0) return -1;
    }
    const dup = pidfdGetfd(pidfd, fd);
    if (dup >= 0) return dup;
    const err = errno();
    if (err === E.EPERM && !hasReportedPermission) {
      hasReportedPermission = true;
      post({ kind: "fatal", reason: "pidfd_getfd", errno: err });
    }
    if (err !== E.ESRCH) return -1;
  }
  return -1;
}

/** The socket's family when it is a TCP (or MPTCP) stream socket, else 0. */
function tcpDomain(fd: number): number {
  if (getIntOpt(fd, SOL_SOCKET, SO_TYPE) !== SOCK_STREAM) return 0;
  const protocol = getIntOpt(fd, SOL_SOCKET, SO_PROTOCOL);
  if (protocol !== IPPROTO_TCP && protocol !== IPPROTO_MPTCP) return 0;
  const domain = getIntOpt(fd, SOL_SOCKET, SO_DOMAIN);
  return domain === AF_INET || domain === AF_INET6 ? domain : 0;
}

function passOn(n: Notif): void {
  replyContinue(listener, n.id);
}

/** The NUL-terminated path at `addr` when it is at most `max` bytes, read without crossing into an unmapped page. */
function readPath(pid: number, addr: number, max: number): string | null {
  const room = PAGE - (addr % PAGE);
  const first = readMemory(pid, addr, Math.min(max + 1, room));
  if (!first) return null;
  let bytes = first;
  if (first.indexOf(0) < 0 && first.length < max + 1) {
    const rest = readMemory(pid, addr + first.length, max + 1 - first.length);
    if (!rest) return null;
    bytes = new Uint8Array([...first, ...rest]);
  }
  const end = bytes.indexOf(0);
  return end < 0 ? null : Buffer.from(bytes.subarray(0, end)).toString("latin1");
}

/** A read-only open: a CA bundle path gets the merged bundle, installed as the call's result; anything else runs as is. */
function handleOpen(n: Notif): void {
  const isOpenat = n.nr === NR.openat;
  const path = trustBundle ? readPath(n.pid, n.args[isOpenat ? 1 : 0]!, longestPath) : null;
  if (!trustBundle || !path || !bundlePaths.has(path) || !isValid(listener, n.id)) {
    passOn(n);
    return;
  }
  let fd: number;
  try {
    fd = openSync(trustBundle.file, "r");
  } catch {
    passOn(n);
    return;
  }
  const flags = n.args[isOpenat ? 2 : 1]!;
  if (addFdAndReply(listener, n.id, fd, flags & O_CLOEXEC ? O_CLOEXEC : 0) < 0) passOn(n);
  closeSync(fd);
}

function handle(n: Notif): void {
  if (Atomics.load(flags, 0) === 1) {
    passOn(n);
    return;
  }
  switch (n.nr) {
    case NR.openat:
    case NR.open:
      handleOpen(n);
      return;
    case NR.execve:
      post({ kind: "started", pid: n.pid });
      {
        passOn(n);
        return;
      }
    case NR.io_uring_setup:
      // Said from here, at once: the program may exit before the main thread reads a message.
      if (!hasReportedIoUring) {
        hasReportedIoUring = true;
        try {
          writeSync(
            2,
            "tapscope: refused io_uring (its network operations would bypass interception); the program falls back to ordinary syscalls\n",
          );
        } catch {}
      }
      replyError(listener, n.id, E.ENOSYS);
      post({ kind: "io_uring", pid: n.pid });
      return;
    case NR.connect:
    case NR.bind: {
      const head = readMemory(n.pid, n.args[1]!, 2);
      const family = head ? head[0]! | (head[1]! << 8) : 0;
      const len = family === AF_INET ? 16 : family === AF_INET6 ? 28 : 0;
      if (!len || n.args[2]! < len) {
        passOn(n);
        return;
      }
      const addr = readMemory(n.pid, n.args[1]!, len);
      if (!addr) {
        passOn(n);
        return;
      }
      const fd = takeFd(n.pid, n.args[0]!);
      if (fd < 0) {
        passOn(n);
        return;
      }
      const domain = tcpDomain(fd);
      if (!domain || !isValid(listener, n.id)) {
        libc.close(fd);
        if (domain) return;
        passOn(n);
        return;
      }
      post({ kind: n.nr === NR.connect ? "connect" : "bind", id: n.id, pid: n.pid, fd, addr, domain });
      return;
    }
    case NR.listen:
    case NR.getsockname:
    case NR.getpeername:
    case NR.accept:
    case NR.accept4: {
      const fd = takeFd(n.pid, n.args[0]!);
      if (fd < 0) {
        passOn(n);
        return;
      }
      const domain = tcpDomain(fd);
      if (!domain) {
        libc.close(fd);
        passOn(n);
        return;
      }
      if (n.nr === NR.listen) post({ kind: "listen", id: n.id, pid: n.pid, fd, backlog: n.args[1]! | 0, domain });
      else if (n.nr === NR.accept || n.nr === NR.accept4) {
        const acceptFlags = n.nr === NR.accept4 ? n.args[3]! : 0;
        post({ kind: "accept", id: n.id, pid: n.pid, fd, addrPtr: n.args[1]!, lenPtr: n.args[2]!, flags: acceptFlags });
      } else {
        const kind = n.nr === NR.getsockname ? "getsockname" : "getpeername";
        post({ kind, id: n.id, pid: n.pid, fd, addrPtr: n.args[1]!, lenPtr: n.args[2]!, domain });
      }
      return;
    }
    default: {
      passOn(n);
      return;
    }
  }
}

for (;;) {
  const n = receive(listener);
  if ("errno" in n) {
    // With no task left on the filter every receive fails at once: say so and stop, rather than spin.
    if (isHungUp(listener)) {
      post({ kind: "unused" });
      break;
    }
    if (n.errno === E.EINTR || n.errno === E.ENOENT) continue;
    break;
  }
  try {
    handle(n);
  } catch (err) {
    replyContinue(listener, n.id);
    Atomics.store(flags, 0, 1);
    post({ kind: "crash", error: errorDetail(err) });
  }
}
