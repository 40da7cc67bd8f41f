import { release } from "node:os";

/**
 * Why `tapscope run` cannot intercept on this machine, or null when it can. Kept free of bun:ffi so it
 * runs (and explains) where libc cannot even be loaded.
 */
export function checkPlatform(): string | null {
  if (process.platform !== "linux") {
    return `tapscope run needs Linux (seccomp user notification); this is ${process.platform}. Use \`tapscope proxy --listen :8080 --to 127.0.0.1:3000\` to trace a server through a reverse proxy.`;
  }
  const [major = 0, minor = 0] = release().split(/[.-]/).map(Number);
  if (major < 5 || (major === 5 && minor < 9)) {
    return `tapscope run needs Linux 5.9 or newer (seccomp ADDFD); this kernel is ${release()}. Upgrade the kernel, or use \`tapscope proxy --listen :8080 --to 127.0.0.1:3000\`.`;
  }
  return null;
}
