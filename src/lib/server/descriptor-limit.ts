import { readFileSync } from "node:fs";

export type DescriptorLimit = { soft: number; hard: number };

const RLIMIT_NOFILE = 7;

/** The process's open-file limit (RLIMIT_NOFILE) from /proc; null where there is none to read. */
export function readDescriptorLimit(): DescriptorLimit | null {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const m = line && /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(line);
    if (!m) return null;
    const value = (text: string) => (text === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(text));
    return { soft: value(m[1]!), hard: value(m[2]!) };
  } catch {
    return null;
  }
}

/**
 * Raises the soft open-file limit to the hard one where it is lower (every WebSocket and request is a
 * descriptor). Returns the limit in force afterwards; a failure leaves the limit as it was.
 */
export async function raiseDescriptorLimit(): Promise<DescriptorLimit | null> {
  const before = readDescriptorLimit();
  if (!before || before.soft >= before.hard || process.platform !== "linux") return before;
  try {
    const { dlopen, FFIType, ptr } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", { setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    try {
      // An unlimited hard limit still meets the kernel's nr_open: ask for what Linux allows by default.
      const target = before.hard === Number.MAX_SAFE_INTEGER ? 1_048_576 : before.hard;
      const limits = new BigUint64Array([BigInt(target), BigInt(before.hard === Number.MAX_SAFE_INTEGER ? target : before.hard)]);
      libc.symbols.setrlimit(RLIMIT_NOFILE, ptr(limits));
    } finally {
      libc.close();
    }
  } catch {
    // No libc to call (a static build, another platform): the limit stays as it is.
  }
  return readDescriptorLimit();
}
