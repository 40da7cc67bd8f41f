import { ptr } from "bun:ffi";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { buildFilter } from "./bpf.ts";
import { cString, E, errno, libc, NR } from "./ffi.ts";

/**
 * The hidden `__tracee` step: runs in the child the supervisor started. It sets no_new_privs, installs
 * the filter with a new listener, and execve's the target. The execve itself is the one syscall the
 * filter notifies for this exact filename pointer, so the child waits in the kernel until the
 * supervisor has taken the listener (pidfd_getfd) and lets it go on.
 * Exit codes follow the shell: 127 command not found, 126 not executable; 125 interception failed.
 */
const PR_SET_PDEATHSIG = 1;
const PR_SET_NO_NEW_PRIVS = 38;
const SIGKILL = 9;
/** The supervisor's pid, set by launch(); like every TAPSCOPE_INTERNAL_ variable it never reaches the program. */
export const SUPERVISOR_PID_VAR = "TAPSCOPE_INTERNAL_SUPERVISOR_PID";
/** Set by launch() when the supervisor answers opens of the CA bundle paths (TLS interception on). */
export const TRAP_OPENS_VAR = "TAPSCOPE_INTERNAL_TRAP_OPENS";
const SECCOMP_SET_MODE_FILTER = 1;
const SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3;
export const TRACEE_SETUP_FAILED = 125;

function resolveExecutable(command: string, pathEnv: string | undefined): string | null {
  if (command.includes("/")) return command;
  for (const dir of (pathEnv ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter)) {
    const candidate = join(dir || ".", command);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

function pointerArray(strings: Uint8Array[]): BigUint64Array {
  const array = new BigUint64Array(strings.length + 1);
  strings.forEach((s, i) => {
    array[i] = BigInt(ptr(s));
  });
  return array;
}

export function runTracee(argv: string[], env: Record<string, string | undefined>): number {
  const [command] = argv;
  if (!command) {
    process.stderr.write("tapscope: no command to run\n");
    return 2;
  }
  const path = resolveExecutable(command, env.PATH);
  if (!path) {
    process.stderr.write(`tapscope: ${command}: command not found\n`);
    return 127;
  }
  const filename = cString(path);
  const argvStrings = argv.map(cString);
  const envStrings = Object.entries(env)
    .filter(([key, value]) => value !== undefined && !key.startsWith("TAPSCOPE_INTERNAL_"))
    .map(([key, value]) => cString(`${key}=${value}`));
  const argvArray = pointerArray(argvStrings);
  const envArray = pointerArray(envStrings);
  const filenamePtr = ptr(filename);

  const filter = buildFilter(filenamePtr, { trapReadOnlyOpens: env[TRAP_OPENS_VAR] === "1" });
  const fprog = new BigUint64Array(2);
  fprog[0] = BigInt(filter.length / 8);
  fprog[1] = BigInt(ptr(filter));

  // The program must not outlive its supervisor (kill -9 of tapscope): with its relay gone it would run on,
  // unreachable, and a process manager would never see a failure. The signal survives execve; it is tied to
  // the thread that spawned us, the supervisor's main thread, which lives as long as the supervisor does.
  if (libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) !== 0) {
    process.stderr.write(`tapscope: cannot set the parent-death signal (errno ${errno()})\n`);
    return TRACEE_SETUP_FAILED;
  }
  // The supervisor may have died before prctl: then we were already handed to another parent.
  const supervisorPid = Number(env[SUPERVISOR_PID_VAR]);
  if (supervisorPid > 0 && libc.getppid() !== supervisorPid) {
    process.stderr.write("tapscope: the supervisor exited before the program started\n");
    return TRACEE_SETUP_FAILED;
  }
  if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) !== 0) {
    process.stderr.write(`tapscope: cannot set no_new_privs (errno ${errno()})\n`);
    return TRACEE_SETUP_FAILED;
  }
  // Runtimes ignore SIGPIPE and may block signals; the target must start with the defaults.
  libc.signal(13, 0);
  libc.sigprocmask(2, new BigUint64Array(16), null);

  const listener = Number(libc.syscall(NR.seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ptr(fprog), 0, 0, 0));
  if (listener < 0) {
    const err = errno();
    process.stderr.write(`tapscope: seccomp user notification is not available here (errno ${err}). ${seccompHint(err)}\n`);
    return TRACEE_SETUP_FAILED;
  }
  libc.execve(filenamePtr, argvArray, envArray);
  const err = errno();
  if (err === E.ENOENT) {
    process.stderr.write(`tapscope: ${command}: No such file or directory\n`);
    return 127;
  }
  process.stderr.write(`tapscope: ${command}: cannot execute (errno ${err})\n`);
  return 126;
}

export function seccompHint(err: number): string {
  if (err === E.EINVAL) {
    return "The kernel rejected SECCOMP_FILTER_FLAG_NEW_LISTENER: it is older than 5.0 or a sandbox such as gVisor (runsc) does not implement it. Run on a regular Linux kernel >= 5.9, or use `tapscope proxy --listen :8080 --to 127.0.0.1:3000`.";
  }
  if (err === E.EACCES || err === E.EPERM) {
    return "A container security profile forbids installing seccomp filters. Run the container with `--security-opt seccomp=unconfined` (Docker) or use `tapscope proxy`.";
  }
  if (err === E.ENOSYS) return "This kernel has no seccomp support. Use `tapscope proxy`.";
  return "Use `tapscope proxy --listen :8080 --to 127.0.0.1:3000` instead.";
}
