import { chmodSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync } from "node:fs";
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

/** Logs of finished runs are kept this long, and at most this many. */
const KEEP_MS = 7 * 24 * 3600_000;
const KEEP_COUNT = 50;

/** Removes the logs of runs that have ended (their supervisor is gone) once old or too many: a daemon restarted often leaves one per run. */
export function pruneRunLogs(dir: string, now = Date.now()): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const ended: Array<{ path: string; at: number }> = [];
  for (const name of names) {
    const pid = /^run-(\d+)\.log$/.exec(name)?.[1];
    if (!pid || existsSync(`/proc/${pid}`)) continue;
    try {
      ended.push({ path: join(dir, name), at: statSync(join(dir, name)).mtimeMs });
    } catch {}
  }
  ended.sort((a, b) => b.at - a.at);
  ended.forEach((log, i) => {
    if (i < KEEP_COUNT && now - log.at < KEEP_MS) return;
    try {
      unlinkSync(log.path);
    } catch {}
  });
}

export function openRunLog(dirs: string[], pid: number, uid = process.getuid?.() ?? 0): RunLog | null {
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch {
      continue;
    }
    if (!isPrivateDir(dir, uid)) continue;
    pruneRunLogs(dir);
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
