/// <reference lib="webworker" />
import { readFileSync, readlinkSync, writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { errorDetail } from "../../lib/errors.ts";
import { environValues, javaHomeOf, namedTrustPaths, trustVariableNames } from "../tls/trust-paths.ts";
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
import { isValid, type Notif, receive, replyContinue, replyError } from "./notif.ts";

/**
 * The notification loop: blocks in SECCOMP_IOCTL_NOTIF_RECV on this Worker thread, never on the event
 * loop. It answers what needs no state at once (not a TCP socket: CONTINUE; io_uring_setup: ENOSYS) and
 * hands TCP work to the supervisor with a dup of the caller's socket; it never waits for network I/O.
 */
const { listener, control, trustOpens } = workerData as WorkerInit;
/** Paths whose opens go to the supervisor: the bundle paths, and every trust file some process's environment named. */
const trustPaths = new Set(trustOpens?.paths ?? []);
const trustSuffixes = trustOpens?.suffixes ?? [];
const PATH_MAX = 4096;
/** The longest path worth reading: none above is longer (a JDK store's path ends with a suffix, so any length may). */
let longestPath = trustSuffixes.length > 0 ? PATH_MAX : Math.max(0, ...[...trustPaths].map((p) => Buffer.byteLength(p)));
/** Threads that exec'd and made no open since: their process's environment may name new trust files. */
const execed = new Set<number>();
let isHandshakeDone = false;
const MAX_TRUST_PATHS = 4096;
const AT_FDCWD = -100;
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

/**
 * After an exec: the trust files this process's own environment (and, for a JVM, its command line) names join the
 * watched paths. Done once per exec, so kept lean: only the variables that matter are looked for.
 */
function learnTrustPaths(pid: number): void {
  let paths: string[];
  try {
    const env = environValues(readFileSync(`/proc/${pid}/environ`, "utf8"), trustVariableNames);
    const argv = javaHomeOf(readlinkSync(`/proc/${pid}/exe`)) ? readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0") : [];
    paths = namedTrustPaths(env, argv);
  } catch {
    return;
  }
  for (const path of paths) {
    const length = Buffer.byteLength(path);
    if (trustPaths.size >= MAX_TRUST_PATHS || length >= PATH_MAX || trustPaths.has(path)) continue;
    if (trustOpens && path.startsWith(`${trustOpens.ownDir}/`)) continue;
    trustPaths.add(path);
    if (length > longestPath) longestPath = length;
  }
}

/**
 * The NUL-terminated path at `addr` when it is at most `max` bytes: a short read first (most paths are short), never
 * across into a page that may be unmapped before the string's end says it is needed.
 */
function readPath(pid: number, addr: number, max: number): string | null {
  const parts: Uint8Array[] = [];
  let at = addr;
  let total = 0;
  let want = 256;
  while (total <= max) {
    const n = Math.min(want, PAGE - (at % PAGE), max + 1 - total);
    const bytes = readMemory(pid, at, n);
    if (!bytes) return null;
    const end = bytes.indexOf(0);
    if (end >= 0) {
      parts.push(bytes.subarray(0, end));
      return Buffer.concat(parts).toString("utf8");
    }
    parts.push(bytes);
    total += n;
    at += n;
    want = PAGE;
  }
  return null;
}

function isTrustPath(path: string): boolean {
  if (trustPaths.has(path)) return true;
  for (const suffix of trustSuffixes) if (path.endsWith(suffix)) return true;
  return false;
}

/**
 * A read-only open: one of a trust file goes to the supervisor, which answers it with merged trust or lets it run
 * (it knows the whole process: its environment, whether it is a JVM); anything else runs as is, answered here.
 */
function handleOpen(n: Notif): void {
  if (!trustOpens) {
    passOn(n);
    return;
  }
  if (execed.delete(n.pid)) learnTrustPaths(n.pid);
  const isOpenat = n.nr === NR.openat;
  const path = readPath(n.pid, n.args[isOpenat ? 1 : 0]!, longestPath);
  // A relative path names a file of the caller's working directory only when openat was given AT_FDCWD.
  const isFromCwd = !isOpenat || n.arg0Int === AT_FDCWD;
  if (!path || (!path.startsWith("/") && !isFromCwd) || !isTrustPath(path) || !isValid(listener, n.id)) {
    passOn(n);
    return;
  }
  const flags = n.args[isOpenat ? 2 : 1]!;
  post({ kind: "trust-open", id: n.id, pid: n.pid, path, isCloexec: (flags & O_CLOEXEC) !== 0 });
}

function handleExec(n: Notif): void {
  if (!isHandshakeDone) {
    isHandshakeDone = true;
    post({ kind: "started", pid: n.pid });
  }
  if (trustOpens) {
    if (execed.size > 4096) execed.clear();
    // By the thread: a thread other than the leader that execs takes the leader's id, and its files are then learnt
    // only where another process names them (rare: runtimes fork before they exec).
    execed.add(n.pid);
  }
  passOn(n);
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
    case NR.execveat:
      handleExec(n);
      return;
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
