/**
 * The hot paths the event field table feeds, this checkout against another one loaded side by side in the same
 * process (`--baseline <checkout>`, e.g. a `git archive` of the commit before): the agent's size estimate and batch
 * encoding, the server's batch and JSON validation, the store sink's stored form (toEventRows), the live history's
 * size estimate and the store's rows back to events. Each case runs the same generateEvents() events through both,
 * alternating which goes first, and reports the median CPU microseconds per event (process.cpuUsage, GC included)
 * and now/before.
 * Without --baseline it times this checkout alone.
 * Run: bun bench/capture/field-table-bench.ts [--baseline <checkout>] [--rounds 15] [--batches 10]; --smoke: tiny.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { generateEvents } from "../../tests/store/generate.ts";
import { isSmoke, optionOf } from "../options.ts";

const option = optionOf(process.argv.slice(2));
const rounds = Number(option("rounds", "15", "2"));
const batches = Number(option("batches", "10", "1"));
const baselineDir = option("baseline", "");
const perBatch = 1000;

type Batch = readonly Record<string, unknown>[];
/** What each checkout provides, wherever its files are. */
type Code = {
  estimateBytes: (event: Record<string, unknown>) => number;
  encode: (seq: number, events: Batch) => Uint8Array;
  validateBatch: (frame: Uint8Array) => { events: Batch } | { error: string };
  validateJson: (raw: unknown) => { ok: boolean };
  toEventRows: (events: Batch) => { count: number };
  estimate: (event: Record<string, unknown>) => number;
  rowToEvent: (row: Record<string, unknown>) => unknown;
};

/** A module of a checkout: the first of these paths that exists (older checkouts keep the validators among the services). */
async function load(root: string, ...paths: string[]): Promise<Record<string, unknown>> {
  const found = paths.map((p) => join(root, p)).find((p) => existsSync(p));
  if (!found) throw new Error(`${root} has none of ${paths.join(", ")}`);
  return (await import(found)) as Record<string, unknown>;
}

async function codeOf(root: string): Promise<Code> {
  const batch = await load(root, "src/lib/protocol/event-batch.ts");
  const validateBatch = await load(root, "src/lib/protocol/validate-event-batch.ts", "src/services/ingest/validate-event-batch.ts");
  const validateJson = await load(root, "src/lib/protocol/validate-event.ts", "src/services/ingest/validate-event.ts");
  const table = await load(root, "src/store/table.ts");
  const event = await load(root, "src/lib/protocol/event-size.ts", "src/lib/protocol/event.ts");
  const estimate = await load(root, "src/agent/publisher/estimate-bytes.ts");
  return {
    estimateBytes: estimate.estimateBytes as Code["estimateBytes"],
    encode: batch.encodeEventBatch as Code["encode"],
    validateBatch: validateBatch.validateEventBatch as Code["validateBatch"],
    validateJson: validateJson.validateEvent as Code["validateJson"],
    toEventRows: table.toEventRows as Code["toEventRows"],
    estimate: event.estimateJsonLength as Code["estimate"],
    rowToEvent: table.rowToEvent as Code["rowToEvent"],
  };
}

const now = await codeOf(resolve(import.meta.dir, "../.."));
const before = baselineDir ? await codeOf(resolve(baselineDir)) : null;

const end = Date.now() * 1000;
const generated = Array.from({ length: batches }, (_, b) =>
  generateEvents({ count: perBatch, startMicros: end - 3_600_000_000, endMicros: end, seed: b + 1 }),
);
/** Bodies as the agent has them: bytes. */
const captured: Batch[] = generated.map((events) =>
  events.map((e) => ({
    ...e,
    http_req_body: Buffer.from(e.http_req_body, "base64"),
    http_resp_body: Buffer.from(e.http_resp_body, "base64"),
  })),
);
const frames = captured.map((events, seq) => now.encode(seq, events));
const parsed = generated.map((events) => events.map((e) => JSON.parse(JSON.stringify(e)) as unknown));
/** Rows as an engine hands them back: ints as numbers, flags 0/1, headers and tags as JSON text. */
const storedRows = generated.map((events) =>
  events.map((e) => {
    const row: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e)) row[k] = typeof v === "boolean" ? (v ? 1 : 0) : typeof v === "object" ? JSON.stringify(v) : v;
    return row;
  }),
);

let sink = 0;
/** Each checkout's own validated events: what its store sink and live hub would get. */
const validated = new Map<Code, Batch[]>();
function validatedBy(code: Code): Batch[] {
  let events = validated.get(code);
  if (!events) {
    events = frames.map((frame) => {
      const r = code.validateBatch(frame);
      if ("error" in r) throw new Error(r.error);
      return r.events;
    });
    validated.set(code, events);
  }
  return events;
}

const cases: Array<[string, (code: Code) => void]> = [
  [
    "agent: batch size estimate",
    (code) => {
      for (const events of captured) for (const e of events) sink += code.estimateBytes(e);
    },
  ],
  [
    "agent: encode a batch (bodies as bytes)",
    (code) => {
      for (const [seq, events] of captured.entries()) sink += code.encode(seq, events).length;
    },
  ],
  [
    "server: read + validate a batch",
    (code) => {
      for (const frame of frames) {
        const r = code.validateBatch(frame);
        if (!("error" in r)) sink += r.events.length;
      }
    },
  ],
  [
    "server: validate JSON events (parsed)",
    (code) => {
      for (const events of parsed) for (const e of events) if (code.validateJson(e).ok) sink++;
    },
  ],
  [
    "store sink: stored form (toEventRows)",
    (code) => {
      for (const events of validatedBy(code)) sink += code.toEventRows(events).count;
    },
  ],
  [
    "live history: size estimate",
    (code) => {
      for (const events of validatedBy(code)) for (const e of events) sink += code.estimate(e as Record<string, unknown>);
    },
  ],
  [
    "store: rows back to events",
    (code) => {
      for (const rows of storedRows) for (const row of rows) if (code.rowToEvent(row)) sink++;
    },
  ],
];

function cpuMicros(fn: () => void): number {
  const c = process.cpuUsage();
  fn();
  const u = process.cpuUsage(c);
  return u.user + u.system;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const events = batches * perBatch;

console.log(`${batches} batches of ${perBatch} events, ${rounds} rounds${before ? `, against ${baselineDir}` : ""}`);
console.log(`${"case".padEnd(42)} ${before ? "before µs  " : ""}now µs${before ? "   now/before" : ""}`);
for (const [label, run] of cases) {
  const times = { now: [] as number[], before: [] as number[] };
  // Warm-up: both compiled before anything is timed.
  run(now);
  if (before) run(before);
  for (let r = 0; r < rounds; r++) {
    const order: Array<["now" | "before", Code]> = before
      ? [
          ["now", now],
          ["before", before],
        ]
      : [["now", now]];
    if (r % 2 === 1) order.reverse();
    for (const [which, code] of order) times[which].push(cpuMicros(() => run(code)) / events);
  }
  const n = median(times.now);
  if (!before) console.log(`${label.padEnd(42)} ${n.toFixed(3).padStart(6)}`);
  else {
    const b = median(times.before);
    console.log(`${label.padEnd(42)} ${b.toFixed(3).padStart(9)}  ${n.toFixed(3).padStart(7)}   ${(n / b).toFixed(2).padStart(10)}`);
  }
}
console.log(`(sink ${sink > 0 ? "ok" : "?"}${isSmoke ? ", smoke run: figures mean nothing" : ""})`);
