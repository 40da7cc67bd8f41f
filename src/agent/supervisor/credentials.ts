import { ptr } from "bun:ffi";
import { readFileSync, readlinkSync } from "node:fs";
import { libc, NR } from "../seccomp/ffi.ts";

/**
 * The supervisor binds addresses and dials peers on the program's behalf, on sockets of its own. Run as root, it
 * would do so with root's rights for a program that dropped its privileges (an nginx worker running as nobody):
 * binding ports below 1024, joining another user's SO_REUSEPORT group, dialing out as root past a firewall's
 * owner rules. So those sockets are made with the calling thread's credentials: its filesystem uid and gid (a
 * socket's owner, which the kernel's SO_REUSEPORT check, netfilter's owner match and uid routing read), its groups,
 * and no capability it lacks (CAP_NET_BIND_SERVICE decides low ports). Credentials are per thread in Linux, so the
 * supervisor's main thread takes them on for the few synchronous calls that make and bind the socket, then takes its
 * own back. An unprivileged supervisor has nothing to give away (under no_new_privs the program cannot gain rights),
 * so this costs nothing there.
 */
export type Credentials = { fsuid: number; fsgid: number; groups: number[]; effective: bigint };

const CAPABILITY_VERSION_3 = 0x20080522;

type OwnCredentials = Credentials & { permitted: bigint; inheritable: bigint; userNamespace: string };

function statusOf(tid: number | "self"): string | null {
  try {
    return readFileSync(`/proc/${tid}/status`, "utf8");
  } catch {
    return null;
  }
}

function field(status: string, name: string): string {
  const start = status.indexOf(`\n${name}:`);
  if (start < 0) return "";
  const from = start + name.length + 2;
  const end = status.indexOf("\n", from);
  return status.slice(from, end < 0 ? undefined : end).trim();
}

function parse(status: string): Credentials | null {
  const uids = field(status, "Uid").split(/\s+/).map(Number);
  const gids = field(status, "Gid").split(/\s+/).map(Number);
  const effective = field(status, "CapEff");
  if (uids.length < 4 || gids.length < 4 || !/^[0-9a-f]+$/i.test(effective)) return null;
  const groups = field(status, "Groups").split(/\s+/).filter(Boolean).map(Number);
  return { fsuid: uids[3]!, fsgid: gids[3]!, groups, effective: BigInt(`0x${effective}`) };
}

function userNamespace(tid: number | "self"): string {
  try {
    return readlinkSync(`/proc/${tid}/ns/user`);
  } catch {
    return "";
  }
}

let own: OwnCredentials | null | undefined;

/** This thread's credentials, read once: only the main thread takes on a program's, and gives them back at once. */
function ownCredentials(): OwnCredentials | null {
  if (own !== undefined) return own;
  own = null;
  const status = statusOf("self");
  const parsed = status ? parse(status) : null;
  if (!status || !parsed || parsed.effective === 0n) return own;
  own = {
    ...parsed,
    permitted: BigInt(`0x${field(status, "CapPrm") || "0"}`),
    inheritable: BigInt(`0x${field(status, "CapInh") || "0"}`),
    userNamespace: userNamespace("self"),
  };
  return own;
}

/**
 * The credentials of thread `tid` of a traced process, or null when they need not be taken on (an unprivileged
 * supervisor, the same credentials as ours) or cannot be read (the thread is gone: its call fails anyway).
 */
export function credentialsOf(tid: number): Credentials | null {
  const mine = ownCredentials();
  if (!mine) return null;
  const status = statusOf(tid);
  const theirs = status ? parse(status) : null;
  if (!theirs) return null;
  // Capabilities held in another user namespace give no rights over ours.
  if (userNamespace(tid) !== mine.userNamespace) theirs.effective = 0n;
  theirs.effective &= mine.permitted;
  const isSame =
    theirs.fsuid === mine.fsuid &&
    theirs.fsgid === mine.fsgid &&
    theirs.effective === mine.effective &&
    theirs.groups.length === mine.groups.length &&
    theirs.groups.every((g, i) => g === mine.groups[i]);
  return isSame ? null : theirs;
}

function syscall(nr: number, a = 0, b = 0): number {
  return Number(libc.syscall(nr, a, b, 0, 0, 0, 0));
}

function setGroups(groups: number[]): void {
  const list = new Uint32Array(Math.max(1, groups.length));
  list.set(groups);
  libc.syscall(NR.setgroups, groups.length, ptr(list), 0, 0, 0, 0);
}

const capHeader = new Uint32Array(2);
const capData = new Uint32Array(6);

function setEffective(effective: bigint, mine: OwnCredentials): boolean {
  capHeader[0] = CAPABILITY_VERSION_3;
  capHeader[1] = 0;
  const low = (v: bigint) => Number(v & 0xffffffffn);
  const high = (v: bigint) => Number((v >> 32n) & 0xffffffffn);
  capData.set([low(effective), low(mine.permitted), low(mine.inheritable), high(effective), high(mine.permitted), high(mine.inheritable)]);
  return Number(libc.syscall(NR.capset, ptr(capHeader), ptr(capData), 0, 0, 0, 0)) === 0;
}

/** Runs `work` (socket creation and bind or connect, synchronously) with `credentials` on this thread. */
export function asProgram<T>(credentials: Credentials | null, work: () => T): T {
  const mine = ownCredentials();
  if (!credentials || !mine) return work();
  setGroups(credentials.groups);
  syscall(NR.setfsgid, credentials.fsgid);
  syscall(NR.setfsuid, credentials.fsuid);
  if (!setEffective(credentials.effective, mine)) {
    restore(mine);
    throw new Error("cannot take on the program's capabilities (capset failed)");
  }
  try {
    return work();
  } finally {
    restore(mine);
  }
}

function restore(mine: OwnCredentials): void {
  setEffective(mine.effective, mine);
  syscall(NR.setfsuid, mine.fsuid);
  syscall(NR.setfsgid, mine.fsgid);
  setGroups(mine.groups);
  // setfsuid reports nothing; -1 changes nothing and answers the current value.
  if (syscall(NR.setfsuid, 0xffffffff) !== mine.fsuid) throw new Error("cannot take back the supervisor's own credentials");
}
