import { chmodSync, constants, lstatSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";

/**
 * The file a background supervisor writes its messages to once the terminal is no longer its own: in the first of
 * `dirs` that is (or can be made) a directory of this user's that nobody else can enter, named for the supervisor's
 * pid. The messages name the program's processes and where its requests go: private, like the server's files.
 */
export type RunLog = { path: string; fd: number };

function isPrivateDir(dir: string, uid: number): boolean {
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== uid) return false;
    if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
    return true;
  } catch {
    return false;
  }
}

export function openRunLog(dirs: string[], pid: number, uid = process.getuid?.() ?? 0): RunLog | null {
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch {
      continue;
    }
    if (!isPrivateDir(dir, uid)) continue;
    const path = join(dir, `run-${pid}.log`);
    try {
      const fd = openSync(
        path,
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_APPEND,
        0o600,
      );
      return { path, fd };
    } catch {}
  }
  return null;
}
