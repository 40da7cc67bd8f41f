import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Captured traffic and the metadata database are for the server's user alone: files created from here on get
 * 0600 and folders 0700, whatever umask the process was started with (PGlite asks for 0666, DuckDB for 0644).
 */
export function setPrivateUmask(): void {
  process.umask(0o077);
}

/**
 * Creates `dir` 0700, or narrows an existing one we own to 0700 (saying so through `say`); a folder owned by
 * someone else is left as it is (we could not chmod it, and it is theirs to decide).
 */
export function ensurePrivateDir(dir: string, say: (message: string) => void): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = statSync(dir);
  if ((stat.mode & 0o077) === 0 || stat.uid !== process.getuid?.()) return;
  chmodSync(dir, 0o700);
  say(`${dir} was open to other users (mode ${(stat.mode & 0o777).toString(8)}); made it private (700)`);
}

/**
 * Takes group and other bits off what we keep in `dir` (the top-level entries `isOurs` names, and everything
 * under them) that we own: files chmod'ed explicitly (PGlite unpacks its initial database with the archive's
 * 0666) and files an older version left under a looser umask. Anything else a user put there is theirs.
 * Returns how many were narrowed. Symbolic links are not followed.
 */
export function narrowTree(dir: string, isOurs: (name: string) => boolean): number {
  const uid = process.getuid?.();
  let narrowed = 0;
  const walk = (path: string) => {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink() || stat.uid !== uid) return;
    if (stat.mode & 0o077) {
      chmodSync(path, stat.mode & 0o700);
      narrowed++;
    }
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  for (const entry of readdirSync(dir)) if (isOurs(entry)) walk(join(dir, entry));
  return narrowed;
}

/** What the server keeps in DATA_DIR: PGlite, the DuckDB store (and its WAL and spill folder), secrets, state. */
export function isServerDataFile(name: string): boolean {
  return (
    name === "pglite" ||
    name === "session-secret" ||
    name === "worker-orgs.json" ||
    name.startsWith("events.duckdb") ||
    name.startsWith("duckdb-")
  );
}
