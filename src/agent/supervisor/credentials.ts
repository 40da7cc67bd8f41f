import { ptr } from "bun:ffi";
import { fstatSync, readFileSync, readlinkSync } from "node:fs";
import { libc, NR } from "../seccomp/ffi.ts";

/**
 * The supervisor binds addresses and dials peers on the program's behalf, on sockets of its own. Run as root, it
 * would do so with root's rights for a program that dropped its privileges (an nginx worker running as nobody):
 * binding ports below 1024, joining another user's SO_REUSEPORT group, dialing out as root past a firewall's
 * owner rules. So those sockets are made as the program's would have been:
 * - owned by the owner of the program's own socket (the uid and gid it was created with): what the kernel's
 *   SO_REUSEPORT check, netfilter's owner match and uid routing read. One fstat of the socket the call is about.
 * - for a bind, with no capability the calling thread lacks (CAP_NET_BIND_SERVICE decides low ports), read with
 *   capget; capabilities held in another user namespace count for nothing here.
 * Credentials are per thread in Linux, so the supervisor's main thread takes them on (setfsuid, setfsgid, capset) for
 * the few synchronous calls that make and bind or connect the socket, then takes its own back. An unprivileged
 * supervisor has nothing to give away (under no_new_privs the program cannot gain rights), so this costs nothing
 * there. Supplementary groups are not taken on (only netfilter's owner match with --suppl-groups reads them).
 */
export type Credentials = { fsuid: number; fsgid: number; effective: bigint };

const CAPABILITY_VERSION_3 = 0x20080522;

type OwnCredentials = Credentials & { permitted: bigint; inheritable: bigint; userNamespace: string };

function field(status: string, name: string): string {
  const start = status.indexOf(`\n${name}:`);
  if (start < 0) return "";
  const from = start + name.length + 2;
  const end = status.indexOf("\n", from);
  return status.slice(from, end < 0 ? undefined : end).trim();
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
  let status = "";
  try {
    status = readFileSync("/proc/thread-self/status", "utf8");
  } catch {
    return own;
  }
  const uids = field(status, "Uid").split(/\s+/).map(Number);
  const gids = field(status, "Gid").split(/\s+/).map(Number);
  const effective = BigInt(`0x${field(status, "CapEff") || "0"}`);
  if (uids.length < 4 || gids.length < 4 || effective === 0n) return own;
  own = {
    fsuid: uids[3]!,
    fsgid: gids[3]!,
    effective,
    permitted: BigInt(`0x${field(status, "CapPrm") || "0"}`),
    inheritable: BigInt(`0x${field(status, "CapInh") || "0"}`),
    userNamespace: userNamespace("self"),
  };
  return own;
}

const capHeader = new Uint32Array(2);
const capData = new Uint32Array(6);

/** The effective capabilities of thread `tid`, or null when it is gone. */
function effectiveOf(tid: number): bigint | null {
  capHeader[0] = CAPABILITY_VERSION_3;
  capHeader[1] = tid;
  if (Number(libc.syscall(NR.capget, ptr(capHeader), ptr(capData), 0, 0, 0, 0)) !== 0) return null;
  return BigInt(capData[0]!) | (BigInt(capData[3]!) << 32n);
}

/**
 * The credentials to make a socket with for the program socket `programFd` of thread `tid`: for a bind (`isBind`,
 * capabilities count) or a dial. Null when they need not be taken on (an unprivileged supervisor, the same as ours)
 * or cannot be read (the caller's call then fails or runs as before).
 */
export function credentialsFor(tid: number, programFd: number, isBind: boolean): Credentials | null {
  const mine = ownCredentials();
  if (!mine) return null;
  let owner: { uid: number; gid: number };
  try {
    owner = fstatSync(programFd);
  } catch {
    return null;
  }
  let effective = mine.effective;
  if (isBind) {
    const theirs = effectiveOf(tid);
    if (theirs === null) return null;
    effective = userNamespace(tid) === mine.userNamespace ? theirs & mine.permitted : 0n;
  }
  if (owner.uid === mine.fsuid && owner.gid === mine.fsgid && effective === mine.effective) return null;
  return { fsuid: owner.uid, fsgid: owner.gid, effective };
}

function syscall(nr: number, a: number): number {
  return Number(libc.syscall(nr, a, 0, 0, 0, 0, 0));
}

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
  syscall(NR.setfsgid, credentials.fsgid);
  syscall(NR.setfsuid, credentials.fsuid);
  if (credentials.effective !== mine.effective && !setEffective(credentials.effective, mine)) {
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
  // setfsuid reports nothing; -1 changes nothing and answers the current value.
  if (syscall(NR.setfsuid, 0xffffffff) !== mine.fsuid) throw new Error("cannot take back the supervisor's own credentials");
}
