import { loadavg } from "node:os";
import { utf8 } from "~/lib/bytes.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { type FrameBody, validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { clearSearchTexts, SearchTexts } from "~/store/search-text.ts";
import { recordHeaderLines, recordSameBody } from "~/store/stored-body.ts";
import { toEventRows } from "~/store/table.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { isSmoke, optionOf } from "../options.ts";

/**
 * What the search fields cost the server's own thread per event, in parts, on bench:store's generated events read
 * from real publish frames (bodies as bytes, as the publisher sends them), and the floor beside it: the same fields
 * made by the cheapest means (header lines joined as they are, bodies read as UTF-8, no lower-casing, no charset,
 * no JSON, no check of any kind, each taken as stored once), so what is left above it is the cost of getting them right.
 *   bun bench/search/fill.ts [--events 50000] [--rounds 7] [--smoke]
 * Each round makes a fresh copy of the events and times each way over it, the ways in turn; the figure is the
 * median of the rounds. The rows (`toEventRows`, what the store sink makes of the events) are timed after each way,
 * and without any search fields (what ingest made before them: header JSON and body base64 written instead).
 */
const arg = optionOf(process.argv.slice(2));
const count = Number(arg("events", "50000", "2000"));
const rounds = Number(arg("rounds", "7", "1"));
const batch = 1000;

const pool = generateEvents({ count, startMicros: 1e15, endMicros: 1e15 + 1e10, seed: 1 }).map((e) => ({
  ...e,
  http_req_body: Buffer.from(e.http_req_body, "base64"),
  http_resp_body: Buffer.from(e.http_resp_body, "base64"),
}));
const frames = Array.from({ length: Math.ceil(count / batch) }, (_, i) => encodeEventBatch(i, pool.slice(i * batch, (i + 1) * batch)));

type Read = { events: TracedEvent[]; req: ReadonlyMap<TracedEvent, FrameBody>; resp: ReadonlyMap<TracedEvent, FrameBody> };
const none: ReadonlyMap<TracedEvent, FrameBody> = new Map();

/** The events as ingest has them after validation: a fresh copy each time (filling changes them). */
function read(): Read[] {
  return frames.map((frame) => {
    const v = validateEventBatch(frame);
    if ("error" in v) throw new Error(v.message);
    return { events: v.events, req: v.frameBodies?.get("http_req_body") ?? none, resp: v.frameBodies?.get("http_resp_body") ?? none };
  });
}

function floorLines(headers: ReadonlyArray<readonly [string, string]>): string {
  if (headers.length === 0) return "";
  const parts = new Array<string>(4 * headers.length + 1);
  for (let k = 0; k < headers.length; k++) {
    const [name, value] = headers[k]!;
    parts[4 * k] = "\n";
    parts[4 * k + 1] = name;
    parts[4 * k + 2] = ": ";
    parts[4 * k + 3] = value;
  }
  parts[4 * headers.length] = "\n";
  return parts.join("");
}

/** A body read as UTF-8 and taken as stored once, unchecked. */
function floorBody(e: TracedEvent, side: "req" | "resp", frame: FrameBody | undefined): string {
  if (!frame?.bytes) return "";
  const text = utf8(frame.bytes, 0, frame.bytes.length);
  recordSameBody(e, side, frame.value, text);
  return text;
}

/** Header lines taken as giving their list back, unchecked. */
function floorHeaders(e: TracedEvent, side: "req" | "resp", headers: ReadonlyArray<readonly [string, string]>): string {
  const lines = floorLines(headers);
  recordHeaderLines(e, side, headers, lines, lines !== "");
  return lines;
}

const ways: ReadonlyArray<{ name: string; make: (r: Read[]) => void }> = [
  {
    name: "none (ingest before the search fields)",
    make: (rs) => {
      for (const r of rs) for (const e of r.events) clearSearchTexts(e);
    },
  },
  {
    name: "floor (copied, no checks)",
    make: (rs) => {
      for (const r of rs) {
        for (const e of r.events) {
          e.search_req_headers = floorHeaders(e, "req", e.http_req_headers);
          e.search_resp_headers = floorHeaders(e, "resp", e.http_resp_headers);
          e.search_req_body = floorBody(e, "req", r.req.get(e));
          e.search_resp_body = floorBody(e, "resp", r.resp.get(e));
        }
      }
    },
  },
  {
    name: "SearchTexts.fill, bodies decoded from base64",
    make: (rs) => {
      const texts = new SearchTexts();
      for (const r of rs) for (const e of r.events) texts.fill(e);
    },
  },
  {
    name: "SearchTexts.fill, bodies from the frame (ingest)",
    make: (rs) => {
      const texts = new SearchTexts();
      for (const r of rs) for (const e of r.events) texts.fill(e, r.req.get(e), r.resp.get(e));
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fields = new Map<string, number[]>(ways.map((w) => [w.name, []]));
const rows = new Map<string, number[]>(ways.map((w) => [w.name, []]));
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < ways.length; i++) {
    const way = ways[(i + round) % ways.length]!;
    const rs = read();
    Bun.gc(true);
    const started = performance.now();
    way.make(rs);
    const made = performance.now();
    for (const r of rs) toEventRows(r.events);
    const done = performance.now();
    fields.get(way.name)!.push(((made - started) * 1000) / count);
    rows.get(way.name)!.push(((done - made) * 1000) / count);
  }
}

const base = median(fields.get(ways[0]!.name)!) + median(rows.get(ways[0]!.name)!);
const floor = median(fields.get(ways[1]!.name)!) + median(rows.get(ways[1]!.name)!);
console.log(`search fields in process: ${count} events, ${rounds} rounds (median), µs per event on the server's thread`);
console.log("\n| way | making the fields | the rows | both | over none | over the floor |");
console.log("|---|---|---|---|---|---|");
for (const way of ways) {
  const f = median(fields.get(way.name)!);
  const r = median(rows.get(way.name)!);
  console.log(
    `| ${way.name} | ${f.toFixed(2)} | ${r.toFixed(2)} | ${(f + r).toFixed(2)} | ${(f + r - base).toFixed(2)} | ${(f + r - floor).toFixed(2)} |`,
  );
}
console.log(
  `\nload average during the run: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}${isSmoke ? " (smoke: the figures mean nothing)" : ""}`,
);
