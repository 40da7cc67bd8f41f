#!/usr/bin/env bun
/**
 * `npm run bench:ws`: what tracing WebSocket messages costs. An echo server (bench/ws/echo-server.mjs, the `ws`
 * package) gets messages at a fixed rate over a few connections, 64 B and 16 KiB, and sends each back; measured side by
 * side in one run, alternated: **direct**, through **haproxy** (mode tcp, one thread: the floor of a user-space
 * relay), under interception with the **relay** alone (bench/capture/relay-only.ts: no parsing, no events), under
 * **tapscope run --no-publish** (traced: relay, parsing and events), and under **tapscope run
 * publishing** to a local `tapscope server`, every message recorded (--ws-message-rate 0, the most work a message can
 * cost). Prints the rate reached, round-trip p50/p99, and the
 * relay's CPU per message (haproxy's, or tapscope's front and supervisor, all threads; an echo is two messages).
 *
 * Options: --rounds N (default 3), --duration S (default 5), --rate messages/s in all (default 2000),
 *          --conns N (default 4), --sizes 64,16384, --smoke (one round of 1 s at 200/s, 64 B: proves it runs).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnServer } from "../../tests/support/server-process.ts";
import { cpuNanos, haproxyTcpConfig, median, stopMeasured, waitForPort } from "../capture/measure.ts";
import { isSmoke, optionOf } from "../options.ts";

const root = resolve(import.meta.dir, "../..");
const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "5", "1"));
const rate = Number(option("rate", "2000", "200"));
const conns = Number(option("conns", "4", "2"));
const sizes = option("sizes", "64,16384", "64").split(",").map(Number);

type Mode = "direct" | "haproxy" | "relay" | "traced" | "published";
const hasHaproxy = !spawnSync("haproxy", ["-v"]).error;
if (!hasHaproxy) console.error("haproxy is not installed: the floor is left out (Debian: apt-get install haproxy)");
const modes: Mode[] = ["direct", ...(hasHaproxy ? (["haproxy"] as Mode[]) : []), "relay", "traced", "published"];
const eventServer = await spawnServer({ env: { LOG_LEVEL: "warn", ANONYMOUS_LINKS_PER_HOUR: "0" } });

/** rate: echoes a second reached; p50/p99: round trip in µs; cpu: the relay's CPU per message in µs (0 direct). */
type Sample = { rate: number; p50: number; p99: number; cpu: number };
const samples = new Map<string, Sample[]>();
let nextPort = 21_000 + Math.floor(Math.random() * 1000);

/** Messages at `rate` a second over `conns` connections for `duration` s, each stamped with its send time. */
async function load(port: number, size: number): Promise<{ echoes: number; rtts: number[]; seconds: number }> {
  const sockets = await Promise.all(
    Array.from({ length: conns }, () => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
      ws.binaryType = "arraybuffer";
      return new Promise<WebSocket>((done, fail) => {
        ws.onopen = () => done(ws);
        ws.onerror = () => fail(new Error(`cannot open a WebSocket to port ${port}`));
      });
    }),
  );
  const rtts: number[] = [];
  for (const ws of sockets) ws.onmessage = (m) => rtts.push((performance.now() - new Float64Array(m.data as ArrayBuffer, 0, 1)[0]!) * 1000);
  const payload = new Uint8Array(Math.max(8, size)).fill(97);
  const tickMs = 10;
  const perTick = rate / (1000 / tickMs);
  const started = performance.now();
  let sent = 0;
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      if (elapsed >= duration * 1000) {
        clearInterval(timer);
        done();
        return;
      }
      // Catch up to the schedule: the rate holds even when a tick comes late.
      const due = Math.floor((elapsed / tickMs + 1) * perTick);
      for (; sent < due; sent++) {
        new Float64Array(payload.buffer, 0, 1)[0] = performance.now();
        sockets[sent % conns]!.send(payload);
      }
    }, tickMs);
  });
  const deadline = performance.now() + 5000;
  while (rtts.length < sent && performance.now() < deadline) await Bun.sleep(20);
  const seconds = (performance.now() - started) / 1000;
  for (const ws of sockets) ws.close();
  return { echoes: rtts.length, rtts, seconds };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function measure(mode: Mode, size: number): Promise<void> {
  const port = nextPort++;
  const appPort = mode === "haproxy" ? nextPort++ : port;
  const server = ["node", join(import.meta.dir, "echo-server.mjs"), String(appPort)];
  const tapscope = [process.execPath, join(root, "src/main.ts"), "run", "--relay-threads", "1", "--ws-message-rate", "0"];
  const command =
    mode === "published"
      ? [...tapscope, "--", ...server]
      : mode === "traced"
        ? [...tapscope, "--no-publish", "--", ...server]
        : mode === "relay"
          ? [process.execPath, join(root, "bench/capture/relay-only.ts"), "--", ...server]
          : server;
  const child = spawn(command[0]!, command.slice(1), {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, TAPSCOPE_ENDPOINT: eventServer.endpoint, TAPSCOPE_TOKEN: "" },
  });
  let relay: ReturnType<typeof spawn> | null = null;
  if (mode === "haproxy") {
    const file = join(mkdtempSync(join(tmpdir(), "bench-ws-haproxy-")), "haproxy.cfg");
    writeFileSync(file, haproxyTcpConfig(`127.0.0.1:${port}`, `127.0.0.1:${appPort}`));
    relay = spawn("haproxy", ["-db", "-f", file], { stdio: "ignore" });
  }
  const measured = relay ?? child;
  try {
    await waitForPort(appPort);
    await waitForPort(port);
    if (!isSmoke) await load(port, size).catch(() => {});
    const cpuBefore = mode === "direct" ? 0 : cpuNanos(measured.pid!);
    const run = await load(port, size);
    const cpu = mode === "direct" || run.echoes === 0 ? 0 : (cpuNanos(measured.pid!) - cpuBefore) / 1000 / (2 * run.echoes);
    const sorted = run.rtts.sort((a, b) => a - b);
    const sample = { rate: run.echoes / run.seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), cpu };
    const list = samples.get(`${mode}/${size}`) ?? [];
    list.push(sample);
    samples.set(`${mode}/${size}`, list);
    process.stderr.write(
      `  ${mode.padEnd(9)} ${String(size).padStart(5)} B  ${sample.rate.toFixed(0)} echoes/s  p50 ${sample.p50.toFixed(0)}µs  p99 ${sample.p99.toFixed(0)}µs${cpu ? `  relay CPU ${cpu.toFixed(1)}µs/msg` : ""}\n`,
    );
  } finally {
    await stopMeasured(relay, child);
  }
}

for (let round = 1; round <= rounds; round++) {
  process.stderr.write(`round ${round}/${rounds}\n`);
  for (const size of sizes) for (const mode of round % 2 ? modes : [...modes].reverse()) await measure(mode, size);
}
await eventServer.kill();

const label = (size: number) => (size >= 1024 ? `${size / 1024} KiB` : `${size} B`);
console.log(
  `\nWebSocket echo at ${rate} messages/s over ${conns} connections: median of ${rounds} alternated runs of ${duration}s (${navigator.hardwareConcurrency} CPUs)`,
);
console.log("traced = tapscope run --no-publish, published = tapscope run publishing, both recording every message (--ws-message-rate 0);");
console.log("relay = intercepted and relayed, no parsing; haproxy = mode tcp, one thread (the floor)\n");
console.log("message  mode       echoes/s  p50       p99       relay CPU/msg");
const cpuOf = new Map<string, number>();
for (const size of sizes) {
  for (const mode of modes) {
    const list = samples.get(`${mode}/${size}`) ?? [];
    const pick = (f: (s: Sample) => number) => median(list.map(f));
    cpuOf.set(
      `${mode}/${size}`,
      pick((s) => s.cpu),
    );
    console.log(
      [
        label(size).padEnd(7),
        mode.padEnd(9),
        pick((s) => s.rate)
          .toFixed(0)
          .padStart(8),
        `${pick((s) => s.p50).toFixed(0)}µs`.padStart(8),
        `${pick((s) => s.p99).toFixed(0)}µs`.padStart(8),
        (mode === "direct" ? "" : `${pick((s) => s.cpu).toFixed(1)}µs`).padStart(14),
      ].join("  "),
    );
  }
}
if (hasHaproxy) {
  console.log("\nrelay CPU per message against haproxy's (target 1.5 publishing):");
  const ratio = (mode: Mode, size: number) => ((cpuOf.get(`${mode}/${size}`) ?? 0) / (cpuOf.get(`haproxy/${size}`) ?? 1)).toFixed(2);
  for (const size of sizes)
    console.log(
      `  ${label(size)}: published ${ratio("published", size)}, traced ${ratio("traced", size)}, relay alone ${ratio("relay", size)}`,
    );
}
