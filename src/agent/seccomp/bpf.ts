import { AUDIT_ARCH, NR } from "./ffi.ts";

/**
 * The classic-BPF seccomp filter. It decides by syscall number and arguments so that ordinary syscalls
 * (read, write, open, close, ...) never reach the supervisor:
 * - connect/bind only when addrlen is an inet size (16, 28, or a sockaddr_storage 128); AF_UNIX paths
 *   have other lengths and run untouched;
 * - accept/accept4 only when the caller asks for the peer address (a NULL addr runs natively; a later
 *   getpeername is answered by the supervisor);
 * - listen, getsockname, getpeername always (rare, per connection at most);
 * - io_uring_setup, so the supervisor can refuse it and say why (its network operations bypass seccomp);
 * - the one execve at handshakeFilenamePtr, which parks the launcher until the supervisor holds the listener;
 * - with `trapReadOnlyOpens` (TLS interception on), openat/open for reading only: the supervisor answers opens of
 *   trust files (the CA bundle paths, the files a process's environment names, a JVM's trust store) with merged
 *   trust. BPF cannot read the path (a pointer), so this is as narrow as the filter can be: writes, creates,
 *   directories and O_PATH opens never reach the supervisor. openat2 is left alone: libc and the runtimes open files
 *   with openat, and openat2's flags live in a struct BPF cannot read. Every execve and execveat is trapped too (not
 *   only the handshake's): a process's environment is read after its exec, before its first open.
 */
const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_RET_K = 0x06;
const BPF_ALU_AND_K = 0x54;
const RET_ALLOW = 0x7fff0000;
const RET_USER_NOTIF = 0x7fc00000;

const OFF_NR = 0;
const OFF_ARCH = 4;
const argLow = (i: number) => 16 + i * 8;
const argHigh = (i: number) => 16 + i * 8 + 4;

type Insn =
  | { code: number; jt: number; jf: number; k: number }
  | { label: string }
  | { jumpTo: string; code: number; k: number; whenTrue: boolean };

export type FilterOptions = { trapReadOnlyOpens?: boolean };

/** Open flags that make an open not a plain read: O_ACCMODE, O_CREAT, O_TRUNC, O_DIRECTORY, O_PATH, O_TMPFILE. */
const NOT_A_READ = 0x3 | 0x40 | 0x200 | (AUDIT_ARCH === 0xc00000b7 ? 0x4000 : 0x10000) | 0x200000 | 0x400000;

export function buildFilter(handshakeFilenamePtr: number, options: FilterOptions = {}): Uint8Array {
  const prog: Insn[] = [];
  const ld = (k: number) => prog.push({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k });
  const ret = (k: number) => prog.push({ code: BPF_RET_K, jt: 0, jf: 0, k });
  const jeqTo = (k: number, label: string) => prog.push({ jumpTo: label, code: BPF_JEQ_K, k, whenTrue: true });
  const label = (name: string) => prog.push({ label: name });

  ld(OFF_ARCH);
  jeqTo(AUDIT_ARCH, "arch_ok");
  ret(RET_ALLOW);
  label("arch_ok");
  ld(OFF_NR);
  jeqTo(NR.connect, "addrlen");
  jeqTo(NR.bind, "addrlen");
  jeqTo(NR.accept, "accept");
  jeqTo(NR.accept4, "accept");
  jeqTo(NR.listen, "notify");
  jeqTo(NR.getsockname, "notify");
  jeqTo(NR.getpeername, "notify");
  jeqTo(NR.io_uring_setup, "notify");
  if (options.trapReadOnlyOpens) {
    jeqTo(NR.execve, "notify");
    jeqTo(NR.execveat, "notify");
  } else {
    jeqTo(NR.execve, "execve");
  }
  if (options.trapReadOnlyOpens) {
    jeqTo(NR.openat, "open_flags_2");
    if (NR.open >= 0) jeqTo(NR.open, "open_flags_1");
  }
  ret(RET_ALLOW);

  if (options.trapReadOnlyOpens) {
    // openat(dirfd, path, flags) and open(path, flags): notify when no flag beyond a plain read is set.
    for (const [name, flagsArg] of [
      ["open_flags_2", 2],
      ["open_flags_1", 1],
    ] as const) {
      label(name);
      ld(argLow(flagsArg));
      prog.push({ code: BPF_ALU_AND_K, jt: 0, jf: 0, k: NOT_A_READ });
      jeqTo(0, "notify");
      ret(RET_ALLOW);
    }
  }

  label("addrlen");
  ld(argLow(2));
  jeqTo(16, "notify");
  jeqTo(28, "notify");
  jeqTo(128, "notify");
  ret(RET_ALLOW);

  label("accept");
  ld(argLow(1));
  jeqTo(0, "accept_low_zero");
  ret(RET_USER_NOTIF);
  label("accept_low_zero");
  ld(argHigh(1));
  jeqTo(0, "allow");
  ret(RET_USER_NOTIF);

  if (!options.trapReadOnlyOpens) {
    label("execve");
    ld(argLow(0));
    jeqTo(handshakeFilenamePtr >>> 0, "execve_high");
    ret(RET_ALLOW);
    label("execve_high");
    ld(argHigh(0));
    jeqTo(Math.floor(handshakeFilenamePtr / 2 ** 32) >>> 0, "notify");
    ret(RET_ALLOW);
  }

  label("notify");
  ret(RET_USER_NOTIF);
  label("allow");
  ret(RET_ALLOW);

  // Resolve labels into relative jump offsets (jf falls through to the next instruction).
  const positions = new Map<string, number>();
  const real: Insn[] = [];
  for (const insn of prog) {
    if ("label" in insn) positions.set(insn.label, real.length);
    else real.push(insn);
  }
  const out = new Uint8Array(real.length * 8);
  const view = new DataView(out.buffer);
  real.forEach((insn, i) => {
    let code: number;
    let jt = 0;
    let jf = 0;
    let k: number;
    if ("jumpTo" in insn) {
      const target = positions.get(insn.jumpTo);
      if (target === undefined) throw new Error(`bpf: unknown label ${insn.jumpTo}`);
      const offset = target - i - 1;
      if (offset < 0 || offset > 255) throw new Error("bpf: jump out of range");
      code = insn.code;
      jt = offset;
      k = insn.k;
    } else {
      const plain = insn as { code: number; jt: number; jf: number; k: number };
      ({ code, jt, jf, k } = plain);
    }
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  return out;
}
