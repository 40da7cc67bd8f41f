import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * Every benchmark still runs: each `npm run bench:*` script, and each script bench/README.md tells a reader to run with
 * `bun bench/...`, is run with `--smoke` (tiny sizes, a second or so per case) and must exit cleanly and print its
 * table with figures in it. scripts/test.sh runs this file on its own, after the other tests: benchmarks measure, so
 * they run one at a time. A smoke run's figures mean nothing; only that they are there.
 */
const root = resolve(import.meta.dir, "../..");
/** What each benchmark's table looks like: its header or label and a row of figures. */
const tables: Record<string, RegExp[]> = {
  "bench:live": [/^latency p99 \(ms\)\s+\|\s+[\d.]+ \|\s+[\d.]+ \| [\d.]+x$/m, /^hub alone \(no sockets, CPU time\): [\d.]+ µs per event/m],
  "bench:capture": [
    /^response {2}conns {2}mode {4}req\/s/m,
    /^1 B\s+16 {2}traced\s+\d+\s+[\d.]+\s+\d+µs\s+[+-]\d+µs\s+\d+µs\s+[+-]\d+µs\s+[\d.]+µs$/m,
    /^1 B\s+16 {2}published\s+\d+\s+[\d.]+/m,
    /^ {2}1 B c=16: traced\/haproxy [\d.]+, published\/haproxy [\d.]+, publishing adds -?[\d.]+ µs\/req$/m,
  ],
  "bench:ceiling": [
    /^tapscope x2\s+\d+\s+[\d.]+\s+[\d.]+µs$/m,
    /^haproxy x1\s+\d+\s+[\d.]+\s+[\d.]+µs$/m,
    /^2 relay threads \/ 1: [\d.]+x/m,
  ],
  "bench:store": [
    /^\| case \| duckdb hist \/ page \/ both \(ms\) \| clickhouse hist \/ page \/ both \(ms\) \|/m,
    /^\| 1 h focus, url contains \/users\/ \| [\d.]+ \/ [\d.]+ \/ \*\*[\d.]+\*\* \(cpu [\d.]+\) \| [\d.]+ \/ [\d.]+ \/ \*\*[\d.]+\*\* \|/m,
    /^ingest duckdb: \d+ events\/s through the publisher WebSocket; \d+ events\/s store alone$/m,
    /^ingest clickhouse: \d+ events\/s/m,
  ],
  "bench:explorer": [
    /^\| case \| first page, median \(ms\) \| p90 \| whole list, median \(ms\) \| p90 \|$/m,
    /^\| brush drag \(about 2 h\) \| \d+ \| \d+ \| \d+ \| \d+ \|$/m,
    /^\| baseline: plain page load \(24 h, no brush\) \| \d+ \| \d+ \| \d+ \| \d+ \|$/m,
  ],
  "bench:soak": [
    /^ {3}t s \| tracer RSS MB \| server RSS MB/m,
    /^ +\d+ \| +\d+ \| +\d+ \| +\d+ \| +\d+ \| +\d+ \| \d+$/m,
    /^requests made [1-9]\d* in \d+ s \(\d+\/s\); stored [1-9]\d*/m,
    /^server RSS max [1-9]\d* MB against a budget of \d+ MB; trend over the last half -?[\d.]+ MB\/min$/m,
  ],
  "bench:tls": [
    /^keep-alive 1 B\s+16\s+\d+\s+\d+\s+[\d.]+\s+[+-]\d+µs\s+[+-]\d+µs\s+[\d.]+\s+[+-]\d+µs$/m,
    /^new connection \(connect \+ TLS handshakes \+ request, one at a time\): direct \d+µs, traced \d+µs/m,
  ],
  "bench:site": [/^page\s+performance {2}accessibility {2}best-practices$/m, /^\/\s+\d+(?: \(below\))?\s+\d+/m],
  "bench:bundle": [
    /^file\s+raw KiB\s+gzip KiB\s+brotli KiB\s+served KiB$/m,
    /^\/\s+[\d.]+ \/ [\d.]+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+ \/ [\d.]+\s+[\d.]+\s+[\d.]+$/m,
  ],
  "bench:cluster": [
    /^ {2}cluster \/ single: [\d.]+ \(target >= 0\.8\)/m,
    /^ {2}across nodes\s+p50 [\d.]+ ms, p99 [\d.]+ ms, seen [\d,]+ of [\d,]+/m,
    /^ {2}2 nodes, 2 shards\s+median [\d,]+ ms, p90 [\d,]+ ms over 10,000 rows/m,
  ],
  "bench:otlp": [
    /^\| export off \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \| 0 \|$/m,
    /^\| export on \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \| [1-9]\d* \|$/m,
    /^export on \/ off: CPU [\d.]+x \([+-][\d.]+ µs per event\), \d+ of \d+ spans delivered$/m,
  ],
  "bench:search": [
    /^\| case \(whole 24 h, histogram \+ first page\) \| found \| histogram \(ms\) \| page \(ms\) \| both \(ms\) \| \/ baseline \| filtered count alone \(ms\) \|$/m,
    /^\| request\.body contains "zebra-7781" \| [\d,]+ \| [\d.]+ \| [\d.]+ \| \*\*[\d.]+\*\* \| [\d.]+x \| [\d.]+ \|$/m,
    /^duckdb, 20,000 events \(10,000 loaded through the store, copied 2 times inside the engine in \d+ s\); load average [\d. ]+ before/m,
    /^clickhouse, 20,000 events \(10,000 loaded through the store, copied 2 times inside the engine in \d+ s\); load average/m,
    /^ {2}the body search's filtered count, no grouping, no page: [\d.]+ ms \(histogram \/ this [\d.]+x\)$/m,
    /^ {2}floor: countIf\(position\(search_req_body, 'zebra-7781'\) > 0\): [\d.]+ ms/m,
    /^ingest duckdb: \d+ events\/s with the search columns made, \d+ events\/s without \(with\/without [\d.]+\)$/m,
    /^stored bytes per event: \d+ with the search columns, \d+ without \([\d.]+x\)$/m,
    /^ingest duckdb, each body stored twice \(base64 and search text\): \d+ events\/s \(twice\/without [\d.]+, once\/twice [\d.]+\)$/m,
    /^stored bytes per event, each body stored twice: \d+ \([\d.]+x\)$/m,
    /^per event: [\d.]+ µs with, [\d.]+ µs without; making the search columns alone [\d.]+ µs, so the store's writing of them -?[\d.]+ µs$/m,
  ],
  "bench:db": [
    /^case {16}conns {2}mode {7}queries\/s {2}p50 µs {2}added p50 {2}relay CPU µs\/query$/m,
    /^pgbench -S\s+\d+ {3}traced\s+\d+\s+\d+\s+[+-]\d+\s+-?[\d.]+$/m,
    /^ {2}redis GET\/SET c=\d+: added p50 traced -?\d+ µs, haproxy -?\d+ µs/m,
  ],
  "bench:endpoints": [
    /^\| engine \| events \| Endpoints table \(ms\) \| histogram \(ms\) \| table \/ histogram \|/m,
    /^\| duckdb \| 2,000 \| \*\*[\d.]+\*\* \| [\d.]+ \| [\d.]+x \| [\d.]+ \| exact \|$/m,
    /^\| clickhouse \| 2,000 \| \*\*[\d.]+\*\* \| [\d.]+ \| [\d.]+x \| [\d.]+ \| approximate \|$/m,
    /^\| clickhouse, made inside \| 3,000 \| \*\*[\d.]+\*\* \| [\d.]+ \| [\d.]+x \| [\d.]+ \| approximate \|$/m,
    /^ {2}rollup against raw scan, \d+ endpoints: counts, errors, bytes, max equal; percentiles differ by at most [\d.]+ %$/m,
    /^ {2}rollup \/ raw scan \(rows \+ sparklines, the same statements the store runs\): [\d.]+ \/ [\d.]+ ms = [\d.]+$/m,
    /^clickhouse t-digest against exact, 2,000 events, top \d+ endpoints: worst p50 [\d.]+ %, p95 [\d.]+ %, p99 [\d.]+ %$/m,
    /^ingest CPU per event \(validate \+ stored rows\): without routes [\d.]+ µs, with routes [\d.]+ µs \(with\/without [\d.]+\); routes add -?[\d.]+ µs per event$/m,
  ],
  "bench/cluster/receive.ts": [/^receive CPU per event: before [\d.]+ µs, now [\d.]+ µs \(now\/before [\d.]+\)$/m],
  "bench:ws": [
    /^message {2}mode {7}echoes\/s {2}p50 {7}p99 {7}relay CPU\/msg$/m,
    /^64 B {5}published\s+\d+\s+\d+µs\s+\d+µs\s+[\d.]+µs$/m,
    /^ {2}64 B: published [\d.]+, traced [\d.]+, relay alone [\d.]+$/m,
  ],
  "bench/capture/startup.ts": [/^ {2}start: traced minus direct +-?\d+$/m],
  "bench/capture/body-sample-bench.ts": [/before [\d.]+ µs, now [\d.]+ µs \(now\/before [\d.]+\)/],
  "bench/capture/field-table-bench.ts": [/^server: read \+ validate a batch\s+[\d.]+$/m, /^live history: size estimate\s+[\d.]+$/m],
  "bench/capture/exchange-bench.ts": [/^size=65536 limit=65536 [\d.]+ us\/exchange/m],
  "bench/capture/parse-bench.ts": [
    /^small keep-alive exchanges[^\n]*\n\s+baseline\s+[\d.]+ ms\s+\d+ MB\/s\s+\d+ events\/s\n\s+parse\s+[\d.]+ ms/m,
    /^gRPC over h2c[^\n]*\n(?:[^\n]*\n){3}\s+parse\/baseline time ratio: [\d.]+$/m,
  ],
  "bench/capture/publish-bench.ts": [/^ {2}publish -> server ack:\s+\d+ ms, [\d,]+ events\/s/m, /^ {2}accepted 2000, sent 2000/m],
  "bench/capture/publish-codec-bench.ts": [/^ {2}=> client [\d.]+x, server [\d.]+x less CPU \(sink ok\)$/m],
  "bench/capture/relay-designs.ts": [/^1 B\s+16 {2}ffi\+trace\s+\d+\s+[\d.]+\s+[\d.]+µs/m],
  "bench/endpoints/rollup-ingest.ts": [
    /^\| with the rollup's view \(now\) \| [\d.]+ \| [\d.]+ \|$/m,
    /^the view adds -?[\d.]+ µs of ClickHouse CPU per event \(with\/without [\d.]+\), wall with\/without [\d.]+$/m,
  ],
  "bench/search/fill.ts": [
    /^\| floor \(copied, no checks\) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| -?[\d.]+ \| -?[\d.]+ \|$/m,
    /^\| SearchTexts\.fill, bodies from the frame \(ingest\) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| -?[\d.]+ \| -?[\d.]+ \|$/m,
  ],
  "bench/store/ingest-steps.ts": [
    /^\| neither \(before search fields and routes\) \| \d+ \| 1\.00 \| \d+ \|$/m,
    /^\| both \(what the server does\) \| \d+ \| [\d.]+ \| \d+ \|$/m,
  ],
  "bench/store/insert.ts": [/^separated columns, batches of \d+, row groups of \d+ \(now\): [\d.]+ us CPU \(best/m],
  "bench/store/sort.ts": [/^\| duckdb \| duration, slowest first \| [\d,]+ of [\d,]+ \| \*\*[\d.]+\*\* \| [\d.]+ \| [\d.]+x \|$/m],
  "bench/store/rows.ts": [/^median CPU per event: before [\d.]+ µs, now [\d.]+ µs \(now\/before [\d.]+\)$/m],
  "bench/tls/process-trust.ts": [
    /^ {2}CPU per exec \(\d+ execs less none, over \d+\): direct -?\d+ µs, tls off -?\d+ µs, tls on -?\d+ µs/m,
    /^trust lookup per TLS connection [^\n]*: [\d.]+ µs$/m,
  ],
  "bench/tls-leg/run.ts": [/^opaque pipe \(no decryption\)\s+req p50 \d+ µs \([+-]\d+\)\s+p99 \d+ µs/m],
};

const scripts = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
const npmBenches = Object.keys(scripts).filter((name) => name.startsWith("bench:"));
/** The scripts bench/README.md names as commands (`bun bench/<folder>/<script>.ts`) that no npm bench script runs. */
const readmeBenches = [...readFileSync(join(root, "bench/README.md"), "utf8").matchAll(/\bbun (bench\/[\w./-]+\.ts)\b/g)]
  .map((m) => m[1]!)
  .filter((file) => !npmBenches.some((name) => scripts[name]?.split(" ").includes(file)));

test("every npm bench script and every script bench/README.md runs has a smoke run here", () => {
  expect(npmBenches.length).toBeGreaterThan(5);
  expect(readmeBenches.length).toBeGreaterThan(5);
  expect([...npmBenches, ...readmeBenches].filter((name) => !tables[name])).toEqual([]);
});

/** The command a bench runs: the npm script's own line (bun there meaning this bun), or `bun <file>`. */
function commandOf(name: string): string[] {
  if (!name.startsWith("bench:")) return [process.execPath, name];
  const line = scripts[name];
  if (!line) throw new Error(`package.json has no script ${name}`);
  const [program, ...rest] = line.split(" ");
  return [program === "bun" ? process.execPath : program!, ...rest];
}

/** A benchmark's share of a busy 2-core machine: a smoke run takes seconds, servers and browsers included. */
const limitMs = 240_000;

for (const name of Object.keys(tables)) {
  test(
    `${name} --smoke runs and prints its table`,
    async () => {
      const command = commandOf(name);
      expect(existsSync(join(root, command[1]!))).toBe(true);
      const child = Bun.spawn([...command, "--smoke"], {
        cwd: root,
        stdout: "pipe",
        stderr: "pipe",
        timeout: limitMs - 10_000,
        killSignal: "SIGKILL",
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      const output = `${stdout}\n--- stderr ---\n${stderr.slice(-4000)}`;
      if (code !== 0) throw new Error(`${name} exited with ${code}:\n${output}`);
      for (const table of tables[name]!) {
        if (!table.test(stdout)) throw new Error(`${name} printed no line matching ${table}:\n${output}`);
      }
      expect(stdout).not.toContain("NaN");
    },
    limitMs,
  );
}
