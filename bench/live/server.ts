/**
 * The benchmark's server process: the real app (createApp, PGlite in memory) listening on loopback, one shared
 * link, and, until the publisher socket is in, a synthetic publisher that hands events to the hub the way ingest
 * does. Driven over stdin/stdout with one JSON object per line.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { links } from "#db/schema/index.ts";
import { parseConfig } from "~/lib/env.ts";
import { randomId } from "~/lib/ids.ts";
import { setLogLevel } from "~/lib/logger.ts";
import { liveHubFor } from "~/services/live/hub-registry.ts";
import { createApp } from "~/server.ts";
import { benchEvent, nowUs } from "./events.ts";

setLogLevel("warn");
const database = await openDatabase({});
const config = parseConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-bench-")), SESSION_SECRET: "bench-secret-0123456789abcdef", PUBLIC_URL: "http://127.0.0.1:1" });
const deps = { config, db: database.db };
const server = createApp(deps).listen({ port: 0, hostname: "127.0.0.1" });
const hub = liveHubFor(deps);
const linkId = randomId();
await database.db.insert(links).values({ id: linkId, expiresAt: new Date(Date.now() + 3_600_000) });

function reply(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function publish(rate: number, seconds: number, batchMs: number): Promise<void> {
  const target = { namespaceId: null, linkId };
  const total = Math.round(rate * seconds);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let sent = 0;
  hub.publisherConnected(target);
  while (sent < total) {
    // Catch up to the schedule: events due by now go out as one batch, as a publisher would send them.
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    if (due > sent) {
      const at = nowUs();
      const batch = [];
      for (let i = sent; i < due; i++) batch.push(benchEvent(i, at));
      hub.accept(target, batch);
      sent = due;
    }
    await Bun.sleep(batchMs);
  }
  // Let the last batch leave before the CPU reading.
  await Bun.sleep(100);
  const cpu = process.cpuUsage(cpu0);
  hub.publisherDisconnected(target);
  reply({ type: "done", published: sent, wallMs: performance.now() - t0, cpuUserMs: cpu.user / 1000, cpuSystemMs: cpu.system / 1000 });
}

reply({ type: "ready", port: server.server!.port, linkId });

let input = "";
for await (const chunk of process.stdin) {
  input += new TextDecoder().decode(chunk);
  let nl = input.indexOf("\n");
  while (nl >= 0) {
    const line = input.slice(0, nl);
    input = input.slice(nl + 1);
    nl = input.indexOf("\n");
    const cmd = JSON.parse(line);
    if (cmd.type === "publish") await publish(cmd.rate, cmd.seconds, cmd.batchMs);
    if (cmd.type === "quit") {
      await server.stop(true);
      process.exit(0);
    }
  }
}
