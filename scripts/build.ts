#!/usr/bin/env bun
/**
 * `npm run build`: compiles the single `tapscope` binary (server + CLI) for linux x64 and arm64.
 *
 *   dist/tapscope-linux-x64, dist/tapscope-linux-arm64   the binaries the server offers at /download/*
 *   dist/tapscope                                        the one for this machine (hard link)
 *
 * Options: --target x64|arm64|all (default all), --outdir <dir> (default dist), --skip-client,
 * --entry <file> (default src/main.ts; tests compile small probes with the same embedding).
 * Environment: TAPSCOPE_COMMIT overrides the commit baked into `tapscope version`.
 *
 * A target other than this machine's needs Bun's runtime for that target (@oven/bun-linux-<arch>) and
 * DuckDB's native files (@duckdb/node-bindings-linux-<arch>): both come from the npm registry through
 * `npm pack`, cached in node_modules/.cache/tapscope-build, so no machine of that architecture is needed.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { BunPlugin } from "bun";

type Arch = "x64" | "arm64";

const root = resolve(import.meta.dir, "..");
const cacheRoot = join(root, "node_modules/.cache/tapscope-build");

function parseArgs(argv: string[]) {
  let targets: Arch[] = ["x64", "arm64"];
  let outdir = join(root, "dist");
  let skipClient = false;
  let entry = join(root, "src/main.ts");
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = arg?.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[++i];
      if (!v) fail(`${arg} needs a value`);
      return v;
    };
    if (arg?.startsWith("--target")) {
      const v = value();
      if (v === "all") targets = ["x64", "arm64"];
      else if (v === "x64" || v === "arm64") targets = [v];
      else fail(`--target must be x64, arm64 or all, got "${v}"`);
    } else if (arg?.startsWith("--outdir")) outdir = resolve(value());
    else if (arg?.startsWith("--entry")) entry = resolve(value());
    else if (arg === "--skip-client") skipClient = true;
    else fail(`unknown option "${arg}"`);
  }
  return { targets, outdir, skipClient, entry };
}

function fail(message: string): never {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

function say(message: string) {
  process.stderr.write(`build: ${message}\n`);
}

function run(cmd: string, args: string[], cwd = root): string {
  const res = spawnSync(cmd, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (res.status !== 0) {
    const why = (res.stderr || res.stdout || "").trim().split("\n").slice(-3).join(" ") || String(res.error ?? `exit ${res.status}`);
    throw new Error(`${cmd} ${args.join(" ")} failed: ${why}`);
  }
  return res.stdout;
}

function gitCommit(): string {
  const fromEnv = process.env.TAPSCOPE_COMMIT;
  if (fromEnv) return fromEnv;
  try {
    const hash = run("git", ["rev-parse", "--short=12", "HEAD"]).trim();
    const dirty = run("git", ["status", "--porcelain", "--untracked-files=no"]).trim() !== "";
    return dirty ? `${hash}-dirty` : hash;
  } catch {
    return "unknown";
  }
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

function pkgVersion(name: string): string {
  const file = join(root, "node_modules", name, "package.json");
  return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
}

function projectVersion(): string {
  return (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;
}

/** Unpacks an npm package (`npm pack`) into the build cache and returns its folder. */
function npmPackage(name: string, version: string): string {
  const dir = join(cacheRoot, `${name.replace("/", "+")}@${version}`);
  if (existsSync(join(dir, "package", "package.json"))) return join(dir, "package");
  mkdirSync(dir, { recursive: true });
  say(`fetching ${name}@${version} from the npm registry`);
  const out = run("npm", ["pack", `${name}@${version}`, "--pack-destination", dir, "--json", "--silent"]);
  const [info] = JSON.parse(out) as Array<{ filename: string }>;
  if (!info) throw new Error(`npm pack ${name}@${version} returned nothing`);
  run("tar", ["xzf", join(dir, info.filename), "-C", dir]);
  rmSync(join(dir, info.filename));
  return join(dir, "package");
}

/** The newest published version of `name` not newer than `wanted`, within the same major.minor. */
function nearestPublished(name: string, wanted: string): string {
  const versions = JSON.parse(run("npm", ["view", name, "versions", "--json", "--silent"])) as string[];
  if (versions.includes(wanted)) return wanted;
  const [major, minor] = wanted.split(".");
  const key = (v: string) =>
    v
      .split(/[.-]/)
      .map((p) => (/^\d+$/.test(p) ? p.padStart(8, "0") : p))
      .join(".");
  const candidates = versions
    .filter((v) => v.startsWith(`${major}.${minor}.`) && key(v) <= key(wanted))
    .sort((a, b) => (key(a) < key(b) ? -1 : 1));
  const best = candidates.at(-1);
  if (!best) throw new Error(`no ${name} ${major}.${minor}.x on the registry (wanted ${wanted})`);
  return best;
}

function bunExecutable(arch: Arch): string {
  if (arch === process.arch) return process.execPath;
  const pkg = npmPackage(`@oven/bun-linux-${arch === "arm64" ? "aarch64" : "x64"}`, Bun.version);
  return join(pkg, "bin", "bun");
}

function duckdbNative(arch: Arch): { addon: string; library: string } {
  const name = `@duckdb/node-bindings-linux-${arch}`;
  const wanted = pkgVersion("@duckdb/node-bindings");
  let dir = join(root, "node_modules", name);
  if (!existsSync(join(dir, "duckdb.node"))) {
    // Remembered, so later builds need no registry look-up (and work offline once the cache is filled).
    const memo = join(cacheRoot, `${name.replace("/", "+")}@${wanted}.resolved`);
    const version = existsSync(memo) ? readFileSync(memo, "utf8").trim() : nearestPublished(name, wanted);
    mkdirSync(cacheRoot, { recursive: true });
    writeFileSync(memo, `${version}\n`);
    // @duckdb/node-api's JavaScript is the same across these patch releases; the addon is what differs.
    if (version !== wanted) say(`${name}@${wanted} is not on the registry; using ${version}`);
    dir = npmPackage(name, version);
  }
  return { addon: join(dir, "duckdb.node"), library: join(dir, "libduckdb.so") };
}

/** build/client as its manifest lists it, compressed copies too (older hashed files linger there for a while after a rebuild). */
function clientFiles(): string[] {
  const dir = join(root, "build/client");
  const manifestPath = join(dir, "manifest.json");
  if (!existsSync(manifestPath)) return listFiles(dir);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { files?: string[]; compressed?: string[] };
  const files = [...(manifest.files ?? []), ...(manifest.compressed ?? [])].map((f) => join(dir, f));
  const missing = files.filter((f) => !existsSync(f));
  if (missing.length > 0) fail(`build/client/manifest.json lists missing files: ${missing.join(", ")}`);
  return [manifestPath, ...files];
}

/** Every src file named *-worker.ts: the scripts code starts with `new Worker(...)`. */
function workerEntrypoints(): string[] {
  return listFiles(join(root, "src")).filter((f) => f.endsWith("-worker.ts"));
}

function usesDuckDb(): boolean {
  return listFiles(join(root, "src")).some((f) => /\.tsx?$/.test(f) && readFileSync(f, "utf8").includes("@duckdb/node-api"));
}

function buildClient(skip: boolean) {
  const script = join(root, "scripts/build-client.ts");
  if (skip || !existsSync(script)) return;
  say("building browser assets (scripts/build-client.ts)");
  const res = spawnSync(process.execPath, [script], { cwd: root, stdio: "inherit" });
  if (res.status !== 0) fail("scripts/build-client.ts failed");
}

type Embedded = {
  pglite: { wasm: string; data: string; initdb: string };
  libduckdb?: { zst: string; size: number };
  migrations: string[];
  client: string[];
};

/** The generated replacement for src/lib/server/embedded-manifest.ts: one `with { type: "file" }` import per file. */
function manifestModule(arch: Arch, files: Embedded, buildId: string): string {
  const imports: string[] = [];
  const ref = (path: string) => {
    const id = `f${imports.length}`;
    imports.push(`import ${id} from ${JSON.stringify(path)} with { type: "file" };`);
    return id;
  };
  const table = (dir: string, paths: string[]) => `{${paths.map((p) => `${JSON.stringify(relative(dir, p))}: ${ref(p)}`).join(", ")}}`;
  const body = `export const embeddedManifest = {
  buildId: ${JSON.stringify(buildId)},
  target: ${JSON.stringify(`linux-${arch}`)},
  pglite: { wasmZst: ${ref(files.pglite.wasm)}, dataZst: ${ref(files.pglite.data)}, initdbZst: ${ref(files.pglite.initdb)} },
  libduckdb: ${files.libduckdb ? `{ zst: ${ref(files.libduckdb.zst)}, size: ${files.libduckdb.size} }` : "undefined"},
  migrations: ${table(join(root, "db/migrations"), files.migrations)},
  client: ${table(join(root, "build/client"), files.client)},
};`;
  return `${imports.join("\n")}\n${body}\n`;
}

/** A zstd copy of `path` in the build cache, made once per content (compressing 70 MB takes a few seconds). */
function zstdCached(path: string): string {
  const bytes = readFileSync(path);
  const out = join(cacheRoot, "zstd", `${createHash("sha256").update(bytes).digest("hex").slice(0, 24)}.zst`);
  if (existsSync(out)) return out;
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, Bun.zstdCompressSync(bytes, { level: 3 }));
  renameSync(tmp, out);
  return out;
}

function hashFiles(paths: string[], salt: string): string {
  const h = createHash("sha256").update(salt);
  for (const p of paths) h.update(p).update(readFileSync(p));
  return h.digest("hex").slice(0, 16);
}

async function buildTarget(arch: Arch, entry: string, outdir: string, commit: string, withDuckDb: boolean) {
  const started = performance.now();
  const startedAt = Date.now();
  const pgliteDir = join(root, "node_modules/@electric-sql/pglite/dist");
  const duck = withDuckDb ? duckdbNative(arch) : undefined;
  const files: Embedded = {
    // Compressed: PGlite gets them decompressed in memory at start (about 40 ms), the download is 10 MB smaller.
    pglite: {
      wasm: zstdCached(join(pgliteDir, "pglite.wasm")),
      data: zstdCached(join(pgliteDir, "pglite.data")),
      initdb: zstdCached(join(pgliteDir, "initdb.wasm")),
    },
    libduckdb: duck ? { zst: zstdCached(duck.library), size: statSync(duck.library).size } : undefined,
    migrations: listFiles(join(root, "db/migrations")),
    client: clientFiles(),
  };
  const all = [
    files.pglite.wasm,
    files.pglite.data,
    files.pglite.initdb,
    ...(files.libduckdb ? [files.libduckdb.zst] : []),
    ...files.migrations,
    ...files.client,
  ];
  const buildId = `${arch}-${hashFiles(all, commit)}`;
  const manifestSource = manifestModule(arch, files, buildId);

  const plugin: BunPlugin = {
    name: "tapscope-embed",
    setup(build) {
      build.onLoad({ filter: /src\/lib\/server\/embedded-manifest\.ts$/ }, () => ({ contents: manifestSource, loader: "ts" }));
      // Its loader `require`s every platform's addon; the binary needs exactly the target's.
      build.onLoad({ filter: /@duckdb\/node-bindings\/duckdb\.js$/ }, () => {
        if (!duck) throw new Error("DuckDB is imported but was not prepared for embedding");
        return { contents: `module.exports = require(${JSON.stringify(duck.addon)});`, loader: "js" };
      });
    },
  };

  const outfile = join(outdir, `tapscope-linux-${arch}`);
  const result = await Bun.build({
    throw: false,
    // The capture Worker is its own module in the binary (src/agent/supervisor/index.ts finds it).
    entrypoints: entry === join(root, "src/main.ts") ? [entry, ...workerEntrypoints()] : [entry],
    compile: {
      target: `bun-linux-${arch}`,
      executablePath: bunExecutable(arch),
      outfile,
      // The binary runs users' programs under `tapscope run`: it must not pick up a .env or bunfig
      // from their working directory (that would change the traced program's environment).
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
    minify: { whitespace: true, syntax: true, identifiers: false },
    sourcemap: "linked",
    bytecode: true,
    format: "esm",
    plugins: [plugin],
    define: {
      TAPSCOPE_BUILD_VERSION: JSON.stringify(projectVersion()),
      TAPSCOPE_BUILD_COMMIT: JSON.stringify(commit),
      TAPSCOPE_BUILD_TARGET: JSON.stringify(`linux-${arch}`),
      TAPSCOPE_BUILD_TIME: JSON.stringify(new Date().toISOString().replace(/\.\d+Z$/, "Z")),
    },
  });
  if (!result.success) {
    for (const entry of result.logs) {
      const at = entry.position ? `${relative(root, entry.position.file)}:${entry.position.line}:${entry.position.column}: ` : "";
      process.stderr.write(`build: ${at}${entry.message}\n`);
    }
    fail(`compiling linux-${arch} failed`);
  }
  // Sourcemaps are embedded in the binary (stack traces point at src/); the files beside it are leftovers.
  for (const name of readdirSync(outdir)) {
    if (name.endsWith(".map") && statSync(join(outdir, name)).mtimeMs >= startedAt - 1000) rmSync(join(outdir, name), { force: true });
  }
  const mb = (statSync(outfile).size / 1024 / 1024).toFixed(1);
  const secs = ((performance.now() - started) / 1000).toFixed(1);
  say(
    `${relative(root, outfile)}: ${mb} MiB in ${secs}s (embedded: pglite, ${files.migrations.length} migration files, ` +
      `${files.client.length} client assets${duck ? ", libduckdb.so" : ", no DuckDB"})`,
  );
  return outfile;
}

const { targets, outdir, skipClient, entry } = parseArgs(process.argv.slice(2));
const started = performance.now();
buildClient(skipClient);
mkdirSync(outdir, { recursive: true });
const commit = gitCommit();
const withDuckDb = usesDuckDb();
for (const arch of targets) {
  const outfile = await buildTarget(arch, entry, outdir, commit, withDuckDb).catch((err: Error) =>
    fail(
      `linux-${arch}: ${err.message}${arch !== process.arch ? " (a cross build needs the npm registry once; --target " + process.arch + " builds only this machine's)" : ""}`,
    ),
  );
  if (arch === process.arch) {
    const host = join(outdir, "tapscope");
    rmSync(host, { force: true });
    linkSync(outfile, host);
  }
}
say(`done in ${((performance.now() - started) / 1000).toFixed(1)}s (commit ${commit})`);
