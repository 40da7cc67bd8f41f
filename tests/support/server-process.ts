import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { namespaces, namespaceTokens, orgs } from "#db/schema/index.ts";
import { newToken } from "~/services/auth/token-format.ts";
import { freePort } from "./ports.ts";

const root = join(import.meta.dir, "../..");

export type ServerProcess = {
  proc: ReturnType<typeof Bun.spawn>;
  port: number;
  endpoint: string;
  dataDir: string;
  /** Everything the server wrote to stderr and stdout so far. */
  log: () => string;
  /** Resident set size of the server process in bytes (from /proc). */
  rssBytes: () => number;
  /** SIGKILL, then the data dir removed unless keepDataDir. */
  kill: () => Promise<void>;
};

/**
 * The real CLI (`bun src/main.ts server`) as a child process on a free loopback port, on the embedded default
 * (PGlite and DuckDB in dataDir), resolved once /api/health answers. Tests that must see the server freeze,
 * crash or grow use this instead of an in-process app, so a frozen server fails the test rather than the runner.
 */
export async function spawnServer(
  opts: { dataDir?: string; env?: Record<string, string>; keepDataDir?: boolean; wrap?: string[]; port?: number } = {},
): Promise<ServerProcess> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "tapscope-server-"));
  const port = opts.port ?? (await freePort());
  const endpoint = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([...(opts.wrap ?? []), process.execPath, "src/main.ts", "server"], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_URL: endpoint,
      DATABASE_URL: "",
      CLICKHOUSE_URL: "",
      SMTP_URL: "",
      ...opts.env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
  };
  void collect(proc.stderr);
  void collect(proc.stdout);
  const server: ServerProcess = {
    proc,
    port,
    endpoint,
    dataDir,
    log: () => text,
    rssBytes: () => {
      const status = readFileSync(`/proc/${proc.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    kill: async () => {
      proc.kill("SIGKILL");
      await proc.exited;
      if (!opts.keepDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${endpoint}/api/health`, { signal: AbortSignal.timeout(1000) })).ok) return server;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) {
      await server.kill();
      throw new Error(`server did not start:\n${text}`);
    }
    await Bun.sleep(50);
  }
}

/** A namespace with a token, written straight into dataDir's PGlite before the server opens it. */
export async function seedNamespaceToken(dataDir: string, name = "seeded"): Promise<{ orgId: string; namespaceId: string; token: string }> {
  const database = await openDatabase({ pgliteDir: join(dataDir, "pglite") });
  try {
    const [org] = await database.db.insert(orgs).values({ name }).returning();
    const [ns] = await database.db.insert(namespaces).values({ orgId: org!.id, name }).returning();
    const minted = newToken("namespace");
    await database.db.insert(namespaceTokens).values({ namespaceId: ns!.id, tokenHash: minted.hash, suffix: minted.suffix });
    return { orgId: org!.id, namespaceId: ns!.id, token: minted.token };
  } finally {
    await database.close();
  }
}

/**
 * Polls /api/health every intervalMs until stop() and returns each answer's latency in ms (a timed-out or
 * failed answer counts as Infinity): what a user of the server would wait while something else happens.
 */
export function pollHealth(endpoint: string, intervalMs = 10): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        // A server out of descriptors or frozen never answers; one that is only slow on a busy machine does, in time.
        const res = await fetch(`${endpoint}/api/health`, { signal: AbortSignal.timeout(15_000) });
        await res.arrayBuffer();
        latencies.push(res.ok ? performance.now() - started : Number.POSITIVE_INFINITY);
      } catch {
        latencies.push(Number.POSITIVE_INFINITY);
      }
      await Bun.sleep(intervalMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/** POST /api/DownloadHar of a namespace over the last `rangeMs` (and the next minute), with a namespace token. */
export function requestHar(endpoint: string, seeded: { token: string; namespaceId: string }, rangeMs = 3_600_000): Promise<Response> {
  const now = Date.now();
  return fetch(`${endpoint}/api/DownloadHar`, {
    method: "POST",
    headers: { authorization: `Bearer ${seeded.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      namespaceId: seeded.namespaceId,
      filter: { clauses: [], global: { lowerMs: now - rangeMs, upperMs: now + 60_000 }, focus: null },
    }),
  });
}
