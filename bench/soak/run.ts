/**
 * `npm run bench:soak [-- --duration 10m --rate 10000 --connections 40 --report 30]`: one program under `tapscope run`
 * (bench/capture/server.js, 1-byte bodies) under steady load from wrk into one server with the defaults of
 * `npm start` (bench/soak/server.ts: MEMORY_LIMIT and DUCKDB_THREADS unset unless the environment sets them).
 * Every 30 s (--report): the tracer's and the server's RSS, events the store sink accepted and wrote. At the end: stored
 * against requests made, server RSS max against its budget, the server RSS trend over the last half (a
 * least-squares slope in MB per minute), tracer RSS max. It exits 1 when the server went over its budget or stored less
 * than was requested.
 *
 * wrk has no rate option: each connection waits `connections * 1000 / rate` ms between requests (wrk's Lua
 * delay()), so the rate is at most --rate; the achieved rate is reported.
 *
 * --smoke: 4 s at up to 500/s, a report every 2 s (proves it runs, measures nothing).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { openDatabase } from "#db/client.ts";
import { namespaces, namespaceTokens, orgs } from "#db/schema/index.ts";
import { defaultMemoryLimit, parseBytes } from "~/lib/server/env.ts";
import { newToken } from "~/services/auth/token-format.ts";
import { tableName } from "~/store/table.ts";
import { tapscopePids } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = join(import.meta.dir, "../..");
const arg = optionOf(process.argv.slice(2));
const parseDuration = (raw: string) => {
  const m = /^(\d+)(s|m|h)?$/.exec(raw);
  if (!m) throw new Error(`--duration must be like 600, 90s, 10m or 1h, got "${raw}"`);
  return Number(m[1]) * (m[2] === "h" ? 3600 : m[2] === "m" ? 60 : 1);
};
const durationS = parseDuration(arg("duration", "10m", "4s"));
const rate = Number(arg("rate", "10000", "500"));
const connections = Number(arg("connections", "40", "4"));
const reportS = Number(arg("report", "30", "2"));
/** How long the tracer gets to publish what is left once the load stops. */
const drainMs = isSmoke ? 2000 : 5000;
const budget = process.env.MEMORY_LIMIT ? (parseBytes(process.env.MEMORY_LIMIT) ?? 0) : defaultMemoryLimit();
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

const rssOf = (pid: number): number => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};
/** `tapscope run` is a front and its supervisor (ADR 0027): both count. */
const tracerRssOf = (pid: number): number => tapscopePids(pid).reduce((sum, one) => sum + rssOf(one), 0);

const dataDir = mkdtempSync(join(tmpdir(), "tapscope-soak-"));
const procs: Bun.Subprocess[] = [];
const cleanup = () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
};
process.on("SIGINT", () => {
  cleanup();
  process.exit(130);
});

try {
  // The namespace and its token, written before the server opens the same PGlite directory.
  const database = await openDatabase({ pgliteDir: join(dataDir, "pglite") });
  const [org] = await database.db.insert(orgs).values({ name: "soak" }).returning();
  const [ns] = await database.db.insert(namespaces).values({ orgId: org!.id, name: "soak" }).returning();
  const { token, hash, suffix } = newToken("namespace");
  await database.db.insert(namespaceTokens).values({ namespaceId: ns!.id, tokenHash: hash, suffix });
  await database.close();

  // A free port chosen up front: PUBLIC_URL (where JoinPublisher sends the tracer's socket) defaults to it.
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const serverPort = probe.port;
  probe.stop(true);
  const server = Bun.spawn(
    [process.execPath, ...(process.env.SOAK_SMOL ? ["--smol"] : []), "bench/soak/server.ts", "--memory-log-ms", String(reportS * 1000)],
    {
      cwd: root,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(serverPort),
        PUBLIC_URL: `http://127.0.0.1:${serverPort}`,
        DATABASE_URL: "",
        SMTP_URL: "",
        CLICKHOUSE_URL: "",
      },
      stdout: "inherit",
      stderr: "pipe",
    },
  );
  procs.push(server);
  const memoryLines: Array<Record<string, number>> = [];
  let port = 0;
  const { promise: listening, resolve: onListening } = Promise.withResolvers<void>();
  void (async () => {
    let buffer = "";
    const reader = server.stderr.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffer += new TextDecoder().decode(chunk.value);
      let nl = buffer.indexOf("\n");
      for (; nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        const record = JSON.parse(line);
        if (record.msg === "tapscope server listening") {
          port = record.port;
          onListening();
        } else if (record.msg?.startsWith("server memory")) memoryLines.push(record);
        else if (process.env.SOAK_VERBOSE || record.level !== "debug") process.stderr.write(`server: ${line}\n`);
      }
    }
  })();
  // A timer that is cleared: a pending one would keep this process alive for its whole minute after the run.
  let startTimer: Timer | undefined;
  await Promise.race([
    listening,
    new Promise((_, reject) => {
      startTimer = setTimeout(() => reject(new Error("server did not start")), 60_000);
    }),
  ]);
  clearTimeout(startTimer);

  const appPort = 20_000 + Math.floor(Math.random() * 20_000);
  const tracer = Bun.spawn(
    [process.execPath, "src/main.ts", "run", "--", process.execPath, "bench/capture/server.js", String(appPort), "1"],
    {
      cwd: root,
      env: { ...process.env, TAPSCOPE_TOKEN: token, TAPSCOPE_ENDPOINT: `http://127.0.0.1:${port}` },
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  procs.push(tracer);
  for (const deadline = Date.now() + 30_000; ; ) {
    if (
      await fetch(`http://127.0.0.1:${appPort}/`).then(
        () => true,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error("traced program did not start");
    await Bun.sleep(200);
  }
  // The probes above were traced too.
  await Bun.sleep(2000);

  const script = join(dataDir, "pace.lua");
  const delayMs = (connections * 1000) / rate;
  writeFileSync(script, `function delay() return ${delayMs} end\n`);
  const started = Date.now();
  const wrk = Bun.spawn(
    ["wrk", "-t", "2", "-c", String(connections), "-d", `${durationS}s`, "-s", script, `http://127.0.0.1:${appPort}/`],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  procs.push(wrk);
  console.log(`soak: ${durationS} s at up to ${rate}/s (${connections} connections, ${delayMs} ms apart), server budget ${mb(budget)} MB`);
  console.log("   t s | tracer RSS MB | server RSS MB | server JS heap MB | store accepted | store written | store buffer");

  type Sample = { t: number; serverRss: number; tracerRss: number };
  const samples: Sample[] = [];
  let serverRssMax = 0;
  let tracerRssMax = 0;
  const sampler = setInterval(() => {
    const s = { t: (Date.now() - started) / 1000, serverRss: rssOf(server.pid), tracerRss: tracerRssOf(tracer.pid) };
    samples.push(s);
    serverRssMax = Math.max(serverRssMax, s.serverRss);
    tracerRssMax = Math.max(tracerRssMax, s.tracerRss);
  }, 1000);
  let printed = 0;
  const printer = setInterval(() => {
    const last = samples.at(-1);
    const m = memoryLines.at(-1);
    if (!last || !m || memoryLines.length === printed) return;
    printed = memoryLines.length;
    console.log(
      `${String(Math.round(last.t)).padStart(6)} | ${String(mb(last.tracerRss)).padStart(13)} | ${String(mb(last.serverRss)).padStart(13)} | ${String(mb(m.heapUsedBytes ?? 0)).padStart(16)} | ${String(m.storeAccepted).padStart(14)} | ${String(m.storeWritten).padStart(13)} | ${m.storeBufferEvents}`,
    );
  }, 1000);

  const wrkOut = await new Response(wrk.stdout).text();
  await wrk.exited;
  const elapsed = (Date.now() - started) / 1000;
  const requests = Number(/(\d+) requests in/.exec(wrkOut)?.[1] ?? Number.NaN);
  const errors = /Non-2xx|Socket errors.*/.exec(wrkOut)?.[0];
  // Let the tracer publish what is left, then stop the server (it writes what is batched) and count.
  await Bun.sleep(drainMs);
  clearInterval(sampler);
  clearInterval(printer);
  tracer.kill("SIGINT");
  await tracer.exited;
  const tracerOut = await new Response(tracer.stdout).text();
  server.kill("SIGTERM");
  await server.exited;

  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  await conn.run(`ATTACH '${join(dataDir, "events.duckdb")}' AS ev (READ_ONLY)`);
  const reader = await conn.runAndReadAll(`SELECT count(*)::INTEGER FROM ev.${tableName(ns!.id)}`);
  const stored = Number(reader.getRows()[0]?.[0]);
  conn.closeSync();

  const half = samples.filter((s) => s.t >= elapsed / 2 && s.t <= elapsed);
  const meanT = half.reduce((a, s) => a + s.t, 0) / half.length;
  const meanR = half.reduce((a, s) => a + s.serverRss, 0) / half.length;
  const slope = half.reduce((a, s) => a + (s.t - meanT) * (s.serverRss - meanR), 0) / half.reduce((a, s) => a + (s.t - meanT) ** 2, 0);

  console.log(`\nwrk: ${wrkOut.trim().split("\n").slice(-3).join(" | ")}`);
  if (errors) console.log(`wrk: ${errors}`);
  if (tracerOut.trim()) console.log(`tracer: ${tracerOut.trim().split("\n").slice(-2).join(" | ")}`);
  console.log(
    `requests made ${requests} in ${Math.round(elapsed)} s (${Math.round(requests / elapsed)}/s); stored ${stored} (${stored - requests >= 0 ? "+" : ""}${stored - requests}; the readiness probes are traced too)`,
  );
  console.log(
    `server RSS max ${mb(serverRssMax)} MB against a budget of ${mb(budget)} MB; trend over the last half ${((slope * 60) / 1024 / 1024).toFixed(2)} MB/min`,
  );
  console.log(`tracer RSS max ${mb(tracerRssMax)} MB`);
  // The soak holds the server to its budget and to storing everything: either failing is the run failing.
  const failures = [
    ...(serverRssMax > budget ? [`server RSS max ${mb(serverRssMax)} MB is over its budget of ${mb(budget)} MB`] : []),
    ...(stored < requests ? [`${requests - stored} requests made were not stored`] : []),
  ];
  for (const failure of failures) console.log(`soak failed: ${failure}`);
  if (failures.length > 0) process.exitCode = 1;
} finally {
  cleanup();
}
