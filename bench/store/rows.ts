/**
 * What the store sink holds while events wait for their insert, side by side in one process: event objects turned
 * into column text at insert time (until session 4), against the events' stored form (toEventRows) made as they
 * arrive (now). Both read the same binary publish frames through the server's validation, keep a backlog of
 * --backlog events as the sink does while DuckDB stores the previous batches, and build each insert's column texts
 * in batches of DuckDB's insertBatchSize; no database, so the figure is the server's JavaScript thread plus the
 * garbage collector's threads. CPU per event counts every thread of the process (/proc/self/stat).
 *
 *   bun bench/store/rows.ts [--events 600000] [--backlog 90000] [--rounds 3]
 *   --smoke: 32,000 events, a backlog of one batch, one round (proves it runs, measures nothing).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { CapturedEvent, TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { estimateJsonLength } from "~/lib/protocol/event-size.ts";
import { validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { duckdbInsertBatchSize as batchSize } from "~/store/duckdb.ts";
import { type EventRows, eventLayout, sliceRows, toEventRows } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";

/** The stored columns as [name, stored type]. */
const eventColumns = eventLayout.columns.map((c) => [c.name as keyof TracedEvent, c.type] as const);

const { values: args } = parseArgs({
  options: { events: { type: "string" }, backlog: { type: "string" }, rounds: { type: "string" }, smoke: { type: "boolean" } },
});
const total = Number(args.events ?? (args.smoke ? 32_000 : 600_000));
const backlog = Number(args.backlog ?? (args.smoke ? batchSize : 90_000));
const rounds = Number(args.rounds ?? (args.smoke ? 1 : 3));
// A batch is taken from the backlog, so a smaller backlog never fills one.
if (!(backlog >= batchSize)) throw new Error(`--backlog must be at least one insert batch (${batchSize} events), got ${args.backlog}`);
const perFrame = 1000;

const startMicros = Date.UTC(2026, 0, 10) * 1000;
const generated = generateEvents({ count: Math.min(total, 100_000), startMicros, endMicros: startMicros + 86_400_000_000, seed: 7 });
const frames: Uint8Array[] = [];
for (let i = 0; i < generated.length; i += perFrame)
  frames.push(encodeEventBatch(i / perFrame, generated.slice(i, i + perFrame) as CapturedEvent[]));

function validated(k: number): TracedEvent[] {
  const result = validateEventBatch(frames[k % frames.length] as Uint8Array);
  if ("error" in result) throw new Error(result.message);
  return result.events;
}

let joined = 0;
/** The insert's column texts (what DuckDB's insert binds), from one array of values per column and chunk. */
function columnTexts(chunks: ReadonlyArray<ReadonlyArray<number[] | string[]>>): void {
  for (let i = 0; i < eventColumns.length; i++) {
    const separator = eventLayout.isText[i] ? "\x1f" : ",";
    joined += chunks.map((columns) => (columns[i] as Array<number | string>).join(separator)).join(separator).length;
  }
}

/** Until session 4: the sink held the event objects; the insert sorted them and made each column's values. */
function objects(): void {
  const held: TracedEvent[] = [];
  const sizes: number[] = [];
  for (let k = 0; k < total / perFrame; k++) {
    for (const event of validated(k)) {
      held.push(event);
      sizes.push(estimateJsonLength(event));
    }
    while (held.length >= backlog) {
      const batch = held.splice(0, batchSize).sort((a, b) => a.time - b.time);
      sizes.splice(0, batchSize);
      columnTexts([
        eventColumns.map(([name, kind]) =>
          kind === "int" || kind === "flag"
            ? batch.map((e) => (kind === "int" ? Math.trunc(Number(e[name]) || 0) : e[name] ? 1 : 0))
            : batch.map((e) => (kind === "json" ? JSON.stringify(e[name] ?? null) : String(e[name] ?? ""))),
        ) as Array<number[] | string[]>,
      ]);
    }
  }
}

/** Now: each offer becomes its stored form as it arrives; a batch takes whole chunks and cuts the last one. */
function rows(): void {
  const held: EventRows[] = [];
  let count = 0;
  for (let k = 0; k < total / perFrame; k++) {
    const chunk = toEventRows(validated(k));
    held.push(chunk);
    count += chunk.count;
    while (count >= backlog) {
      const batch: EventRows[] = [];
      for (let need = batchSize; need > 0; ) {
        const first = held[0] as EventRows;
        if (first.count <= need) {
          batch.push(held.shift() as EventRows);
          need -= first.count;
        } else {
          batch.push(sliceRows(first, 0, need));
          held[0] = sliceRows(first, need, first.count);
          need = 0;
        }
      }
      count -= batchSize;
      columnTexts(batch.map((r) => r.columns));
    }
  }
}

/** CPU time of every thread of this process, in microseconds. */
function cpuMicros(): number {
  const fields = (readFileSync("/proc/self/stat", "utf8").split(") ")[1] as string).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const modes = [
  ["event objects, columns at insert (before)", objects],
  ["stored form on arrival (now)", rows],
] as const;
for (const [, run] of modes) run(); // warm-up
const cpu = new Map<string, number[]>();
console.log(`${total} events per run, frames of ${perFrame}, backlog ${backlog}, batches of ${batchSize}`);
for (let round = 0; round < rounds; round++) {
  for (const [name, run] of round % 2 === 0 ? modes : [...modes].reverse()) {
    Bun.gc(true);
    const c0 = cpuMicros();
    const t0 = performance.now();
    run();
    const perEvent = (cpuMicros() - c0) / total;
    console.log(
      `  round ${round + 1}  ${name.padEnd(44)} cpu ${perEvent.toFixed(2)} µs/event  wall ${((1000 * (performance.now() - t0)) / total).toFixed(2)} µs/event`,
    );
    cpu.set(name, [...(cpu.get(name) ?? []), perEvent]);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const before = median(cpu.get(modes[0][0]) as number[]);
const now = median(cpu.get(modes[1][0]) as number[]);
console.log(`median CPU per event: before ${before.toFixed(2)} µs, now ${now.toFixed(2)} µs (now/before ${(now / before).toFixed(2)})`);
if (joined === 0) throw new Error("nothing joined");
