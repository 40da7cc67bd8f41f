/**
 * The benchmark's server process: the real app (createApp, PGlite in memory, no store) listening on loopback.
 * Driven over stdin/stdout, one JSON object per line: "cpu-start" / "cpu-stop" bracket the measured run.
 * With --hub, it also plays the publisher itself, handing events straight to the live hub (no publish socket).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { links } from "#db/schema/index.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { randomId } from "~/lib/server/ids.ts";
import { setLogLevel } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { benchEvent, nowUs } from "./events.ts";

setLogLevel("warn");
const database = await openDatabase({});
const config = parseConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-bench-")),
  SESSION_SECRET: "bench-secret-0123456789abcdef",
  PUBLIC_URL: "http://127.0.0.1:1",
});
const runtime = createRuntime({ config, db: database.db });
const server = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
const { hub } = runtime;

const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

/** Event-loop lag: how late a 10 ms timer fires, worst case since cpu-start. */
let maxLagMs = 0;
let lastTick = performance.now();
setInterval(() => {
  const now = performance.now();
  maxLagMs = Math.max(maxLagMs, now - lastTick - 10);
  lastTick = now;
}, 10);

let cpu0 = process.cpuUsage();
let t0 = performance.now();

async function publishDirect(linkId: string, rate: number, seconds: number, batchMs: number): Promise<void> {
  const target = { namespaceId: null, linkId };
  const total = Math.round(rate * seconds);
  const start = performance.now();
  let sent = 0;
  hub.publisherConnected(target);
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
    if (due > sent) {
      const at = nowUs();
      const batch = [];
      for (let i = sent; i < due; i++) batch.push(benchEvent(i, at));
      hub.accept(target, batch);
      sent = due;
    }
    await Bun.sleep(batchMs);
  }
  hub.publisherDisconnected(target);
  reply({ type: "done", published: sent, accepted: sent, rateLimited: 0, refused: 0, wallMs: performance.now() - start });
}

reply({ type: "ready", port: server.server!.port });

let input = "";
for await (const chunk of process.stdin) {
  input += new TextDecoder().decode(chunk);
  let nl = input.indexOf("\n");
  while (nl >= 0) {
    const cmd = JSON.parse(input.slice(0, nl));
    input = input.slice(nl + 1);
    nl = input.indexOf("\n");
    if (cmd.type === "make-link") {
      const linkId = randomId();
      await database.db.insert(links).values({ id: linkId, expiresAt: new Date(Date.now() + 3_600_000) });
      reply({ type: "link", linkId });
    } else if (cmd.type === "publish") {
      await publishDirect(cmd.linkId, cmd.rate, cmd.seconds, cmd.batchMs);
    } else if (cmd.type === "cpu-start") {
      cpu0 = process.cpuUsage();
      t0 = performance.now();
      maxLagMs = 0;
    } else if (cmd.type === "cpu-stop") {
      const cpu = process.cpuUsage(cpu0);
      reply({ type: "cpu", userMs: cpu.user / 1000, systemMs: cpu.system / 1000, wallMs: performance.now() - t0, maxLagMs });
    } else if (cmd.type === "quit") {
      await server.stop(true);
      process.exit(0);
    }
  }
}
