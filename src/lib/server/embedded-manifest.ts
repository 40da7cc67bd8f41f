/**
 * What a compiled binary carries. From source this module says "nothing embedded"; scripts/build.ts
 * replaces it at build time with a generated module that imports each file `with { type: "file" }`,
 * so every value below becomes a path inside the binary (`/$bunfs/root/...`).
 */
export type EmbeddedManifest = {
  /** Content hash of everything embedded: names the extraction directory in the cache. */
  buildId: string;
  target: "linux-x64" | "linux-arm64";
  /** PGlite's pglite.wasm, pglite.data and initdb.wasm, each zstd-compressed (15 MB -> 5 MB of download). */
  pglite: { wasmZst: string; dataZst: string; initdbZst: string };
  /**
   * libduckdb.so for the target, zstd-compressed (70 MB -> about 22 MB of download), extracted once and
   * dlopen'ed before @duckdb/node-api loads its `.node` addon. `size` is the uncompressed size.
   */
  libduckdb: { zst: string; size: number } | undefined;
  /** db/migrations, by path relative to that folder ("0000_init.sql", "meta/_journal.json"). */
  migrations: Record<string, string>;
  /** build/client (hashed browser assets + manifest), by path relative to that folder. */
  client: Record<string, string>;
};

export const embeddedManifest: EmbeddedManifest | undefined = undefined;
