import { closeSync, writeSync } from "node:fs";
import { libc } from "../seccomp/ffi.ts";
import { FRONT_FD_VAR, FRONT_PID_VAR } from "./front.ts";

/** The supervisor's side of its link to the front (see front.ts). */
export type FrontLink = {
  tell(line: string): void;
  /** Lets the front exit with `code` without taking the supervisor with it; the link is closed after. */
  handOver(code: number): void;
  /** From now on the front's death is SIGHUP to the supervisor, not SIGKILL (the program is gone; what it left is not). */
  softenDeath(): void;
  /** Whether the front has died (the supervisor was reparented). */
  isGone(): boolean;
};

const PR_SET_PDEATHSIG = 1;
const PR_SET_CHILD_SUBREAPER = 36;
const SIGHUP = 1;
const SIGKILL = 9;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/**
 * Set up at the supervisor's start. It dies with the front while the program runs (kill -9 of `tapscope run` then
 * takes the supervisor, and with it the program, as with one process), and it becomes a child subreaper: processes
 * the program leaves behind are reparented to it instead of init, so they stay its descendants (it can list, reap
 * and signal them, and keeps the ptrace access pidfd_getfd needs where Yama allows only ancestors).
 * Returns null when not started by a front (the link's variables are missing).
 */
export function attachFront(env: Record<string, string | undefined>): FrontLink | null {
  libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const fd = Number(env[FRONT_FD_VAR]);
  const frontPid = Number(env[FRONT_PID_VAR]);
  if (!Number.isInteger(fd) || fd <= 2 || !(frontPid > 0)) return null;
  // The link must not reach the program: its fds are exactly its own.
  libc.fcntl(fd, F_SETFD, FD_CLOEXEC);
  libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (libc.getppid() !== frontPid) process.exit(125);
  let isOpen = true;
  return {
    tell(line) {
      if (!isOpen) return;
      try {
        writeSync(fd, `${line}\n`);
      } catch {
        isOpen = false;
      }
    },
    softenDeath() {
      libc.prctl(PR_SET_PDEATHSIG, SIGHUP, 0, 0, 0);
    },
    isGone: () => libc.getppid() !== frontPid,
    handOver(code) {
      libc.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
      this.tell(`background ${code}`);
      if (!isOpen) return;
      isOpen = false;
      try {
        closeSync(fd);
      } catch {}
    },
  };
}
