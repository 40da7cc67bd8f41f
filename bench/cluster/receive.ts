/**
 * What a cluster node spends on each event another node sends it through Redis, before the event reaches its live hub.
 * Baseline: the JSON parse every node always paid. Measured: that parse with the live batch's schema check and the
 * publish validator over each event (lib/protocol/cluster.ts, ADR 0021). CPU time, rounds alternated, medians.
 *   bun bench/cluster/receive.ts [--events 200000] [--batch 50] [--rounds 9]
 *   --smoke: 2,000 events, 3 rounds (proves it runs, measures nothing).
 */
import { decodeBrokerMessage, encodeBrokerMessage } from "~/lib/protocol/cluster.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { sampleEvent } from "../../tests/support/publish-server.ts";
import { optionOf } from "../options.ts";

const option = optionOf(process.argv.slice(2));
const events = Number(option("events", "200000", "2000"));
const batch = Number(option("batch", "50"));
const rounds = Number(option("rounds", "9", "3"));

const texts = Array.from({ length: Math.ceil(events / batch) }, (_, i) =>
  encodeBrokerMessage("live", {
    n: "node-a",
    ns: crypto.randomUUID(),
    l: null,
    e: Array.from({ length: batch }, (_, k) => sampleEvent({ http_req_path: `/users/${i * batch + k}?page=${k % 7}` })),
  }),
);

let sink = 0;

/** As before: parsed, taken as it came. */
function parseOnly(): void {
  for (const text of texts) sink += (JSON.parse(text) as { e: TracedEvent[] }).e.length;
}

/** As now: parsed, the batch's shape checked, each event through the publish validator. */
function checked(): void {
  for (const text of texts) {
    const decoded = decodeBrokerMessage("live", text);
    if (!decoded.ok) throw new Error(decoded.error);
    for (const raw of decoded.value.e) if (validateEvent(raw).ok) sink++;
  }
}

function cpuUsPerEvent(run: () => void): number {
  const before = process.cpuUsage();
  run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (texts.length * batch);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const parsed: number[] = [];
const now: number[] = [];
parseOnly();
checked();
for (let r = 0; r < rounds; r++) {
  parsed.push(cpuUsPerEvent(parseOnly));
  now.push(cpuUsPerEvent(checked));
}
const before = median(parsed);
const after = median(now);
const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
console.log(
  `${texts.length * batch} events in live batches of ${batch}, ${rounds} rounds each, load average ${load} (sink ${sink > 0 ? "ok" : "empty"})`,
);
console.log(
  `receive CPU per event: before ${before.toFixed(2)} µs, now ${after.toFixed(2)} µs (now/before ${(after / before).toFixed(2)})`,
);
