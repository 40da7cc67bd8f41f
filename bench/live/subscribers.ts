/**
 * A share of the benchmark's viewers in their own process (browsers are separate processes too): opens them on the
 * live socket, sets their filters, and answers the parent over stdin/stdout: "count" (events received so far),
 * "report" (what arrived, what was lost, latencies as base64 Float32Array, this process's CPU and event-loop lag).
 *   bun subscribers.ts <url> <capacity> <filter-set index>,<filter-set index>,...   ("-" = no filter)
 */
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilterChips } from "~/lib/filter/parse.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import { benchEvent, benchFilters, nowUs } from "./events.ts";

const [url, capacityArg, sets] = process.argv.slice(2) as [string, string, string];
const capacity = Number(capacityArg);
const reply = (value: unknown, then?: () => void) => process.stdout.write(`${JSON.stringify(value)}\n`, then);

let maxLagMs = 0;
let lastTick = performance.now();
setInterval(() => {
  const now = performance.now();
  maxLagMs = Math.max(maxLagMs, now - lastTick - 10);
  lastTick = now;
}, 10);

type Sub = {
  ws: WebSocket;
  filters: string[];
  /** Latencies in ms, in arrival order. */
  latencies: Float64Array;
  count: number;
  /** 1 where event i arrived (a bitmap, so the subscribers' process stays light on memory and GC). */
  seen: Uint8Array;
  received: number;
  dropped: number;
  applied: boolean;
};

const timeRe = /"time":(\d+)/g;
const idRe = /"event_id":"[0-9a-f-]{24}(\d{12})"/g;

/**
 * The subscribers only need each event's publish time and index, so they scan the message for those two fields
 * instead of parsing every event (a browser parses; here that would measure this process, not the server).
 */
function openSubscriber(url: string, filters: string[], capacity: number): Promise<Sub> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const sub: Sub = {
      ws,
      filters,
      latencies: new Float64Array(capacity),
      count: 0,
      seen: new Uint8Array(capacity),
      received: 0,
      dropped: 0,
      applied: false,
    };
    ws.onmessage = (m) => {
      const at = nowUs();
      const text = String(m.data);
      if (text.startsWith('{"type":"events"')) {
        const times = text.matchAll(timeRe);
        for (const id of text.matchAll(idRe)) {
          const time = Number(times.next().value![1]);
          const i = Number(id[1]);
          if (sub.count < capacity) sub.latencies[sub.count++] = (at - time) / 1000;
          if (i < capacity && sub.seen[i] === 0) {
            sub.seen[i] = 1;
            sub.received++;
          }
        }
        return;
      }
      const msg = JSON.parse(text) as LiveServerMessage;
      if (msg.type === "config-applied") sub.applied = true;
      else if (msg.type === "dropped") sub.dropped += msg.count;
    };
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "setConfig", revision: 1, filters }));
      resolve(sub);
    };
    ws.onerror = () => reject(new Error("subscriber refused"));
  });
}

const subs: Sub[] = [];
for (const set of sets.split(",")) subs.push(await openSubscriber(url, set === "-" ? [] : benchFilters[Number(set)]!, capacity));
while (!subs.every((s) => s.applied)) await Bun.sleep(10);
let cpu0 = process.cpuUsage();
reply({ type: "ready" });

let input = "";
for await (const chunk of process.stdin) {
  input += new TextDecoder().decode(chunk);
  let nl = input.indexOf("\n");
  while (nl >= 0) {
    const cmd = JSON.parse(input.slice(0, nl));
    input = input.slice(nl + 1);
    nl = input.indexOf("\n");
    if (cmd.type === "start") {
      cpu0 = process.cpuUsage();
      maxLagMs = 0;
    } else if (cmd.type === "count") {
      reply({ type: "count", received: subs.map((s) => s.received) });
    } else if (cmd.type === "report") {
      const cpu = process.cpuUsage(cpu0);
      let lost = 0;
      let delivered = 0;
      let dropped = 0;
      let n = 0;
      for (const s of subs) n += s.count;
      const latencies = new Float32Array(n);
      let at = 0;
      for (const s of subs) {
        const parsed = parseFilterChips(s.filters);
        if (!parsed.ok) throw new Error(parsed.error.message);
        const pred = compileFilter(parsed.expr);
        for (let i = 0; i < cmd.published; i++) if (s.seen[i] === 0 && pred(benchEvent(i, 0))) lost++;
        delivered += s.received;
        dropped += s.dropped;
        latencies.set(s.latencies.subarray(0, s.count), at);
        at += s.count;
        s.ws.close();
      }
      reply(
        {
          type: "report",
          lost,
          delivered,
          dropped,
          cpuMs: (cpu.user + cpu.system) / 1000,
          maxLagMs,
          latencies: Buffer.from(latencies.buffer).toString("base64"),
        },
        // Exit only once the (large) line has left: exiting at once would cut it off in the pipe.
        () => process.exit(0),
      );
    }
  }
}
