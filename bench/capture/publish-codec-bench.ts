/**
 * The publish wire format alone, JSON against the binary event batch, side by side in one process on the same
 * batches of 1000 generateEvents() events (bodies as the agent now has them: bytes; and as base64 strings):
 *   client: the JSON message as the publisher built it before (JSON.stringify per event, Buffer.byteLength for
 *           batching, joined, UTF-8 encoded; bodies base64 strings, and again from bytes: the base64 the
 *           tracer no longer makes)  vs  encodeEventBatch
 *   server: UTF-8 decode + JSON.parse + validateEvent per event  vs  validateEventBatch (read + validate)
 * Figures are CPU microseconds per event (process.cpuUsage, GC included), best of a few rounds, interleaved so
 * machine noise hits both alike. Run: bun bench/capture/publish-codec-bench.ts [batches, default 20; --smoke: 1]
 */
import { bodyBase64, type CapturedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { isSmoke, positional } from "../options.ts";

const batches = Number(positional[0] ?? (isSmoke ? 1 : 20));
const perBatch = 1000;
const rounds = 5;
const now = Date.now() * 1000;
const asStrings = Array.from({ length: batches }, (_, b) =>
  generateEvents({ count: perBatch, startMicros: now - 3_600_000_000, endMicros: now, seed: b + 1 }),
);
const asBytes: CapturedEvent[][] = asStrings.map((batch) =>
  batch.map((e) => ({
    ...e,
    http_req_body: Buffer.from(e.http_req_body, "base64"),
    http_resp_body: Buffer.from(e.http_resp_body, "base64"),
  })),
);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function cpuMicros(fn: () => void): number {
  const c = process.cpuUsage();
  fn();
  const u = process.cpuUsage(c);
  return u.user + u.system;
}
function best(fn: () => void): number {
  let min = Number.POSITIVE_INFINITY;
  for (let r = 0; r < rounds; r++) min = Math.min(min, cpuMicros(fn));
  return min / (batches * perBatch);
}

const jsonFrames = asStrings.map((events, seq) => encoder.encode(JSON.stringify({ type: "events", seq, events })));
const binaryFrames = asBytes.map((events, seq) => encodeEventBatch(seq, events));
const binaryFromStrings = asStrings.map((events, seq) => encodeEventBatch(seq, events));

let sink = 0;
const jsonEncode = () => {
  for (const [seq, events] of asStrings.entries()) {
    const parts: string[] = [];
    for (const e of events) {
      const json = JSON.stringify(e);
      sink += Buffer.byteLength(json);
      parts.push(json);
    }
    sink += encoder.encode(`{"type":"events","seq":${seq},"events":[${parts.join(",")}]}`).length;
  }
};
const jsonEncodeFromBytes = () => {
  for (const [seq, events] of asBytes.entries()) {
    const parts: string[] = [];
    for (const e of events) {
      const json = JSON.stringify({ ...e, http_req_body: bodyBase64(e.http_req_body), http_resp_body: bodyBase64(e.http_resp_body) });
      sink += Buffer.byteLength(json);
      parts.push(json);
    }
    sink += encoder.encode(`{"type":"events","seq":${seq},"events":[${parts.join(",")}]}`).length;
  }
};
const jsonDecode = () => {
  for (const frame of jsonFrames) {
    const message = JSON.parse(decoder.decode(frame)) as { events: unknown[] };
    for (const e of message.events) if (validateEvent(e).ok) sink++;
  }
};
const results = {
  "client JSON (as the publisher built it)": 0,
  "client JSON, bodies as bytes (base64 first)": 0,
  "client binary, bodies as bytes": 0,
  "client binary, bodies as base64 strings": 0,
  "server JSON (decode + parse + validateEvent)": 0,
  "server binary, bodies as bytes": 0,
  "server binary, bodies as base64 strings": 0,
};
for (let warm = 0; warm < 2; warm++) {
  results["client JSON (as the publisher built it)"] = best(jsonEncode);
  results["client JSON, bodies as bytes (base64 first)"] = best(jsonEncodeFromBytes);
  results["client binary, bodies as bytes"] = best(() => {
    for (const [seq, events] of asBytes.entries()) sink += encodeEventBatch(seq, events).length;
  });
  results["client binary, bodies as base64 strings"] = best(() => {
    for (const [seq, events] of asStrings.entries()) sink += encodeEventBatch(seq, events).length;
  });
  results["server JSON (decode + parse + validateEvent)"] = best(jsonDecode);
  for (const [label, frames] of [
    ["server binary, bodies as bytes", binaryFrames],
    ["server binary, bodies as base64 strings", binaryFromStrings],
  ] as const) {
    results[label] = best(() => {
      for (const frame of frames) {
        const r = validateEventBatch(frame);
        if (!("error" in r)) sink += r.events.length;
      }
    });
  }
}
const size = (frames: Uint8Array[]) => Math.round(frames.reduce((s, f) => s + f.length, 0) / (batches * perBatch));
console.log(
  `${batches} batches of ${perBatch} events; bytes per event: JSON ${size(jsonFrames)}, binary ${size(binaryFrames)} (bodies as bytes), ${size(binaryFromStrings)} (base64 strings)`,
);
for (const [label, us] of Object.entries(results)) console.log(`  ${label.padEnd(46)} ${us.toFixed(2).padStart(6)} us CPU per event`);
console.log(
  `  => client ${(results["client JSON, bodies as bytes (base64 first)"] / results["client binary, bodies as bytes"]).toFixed(1)}x, server ${(results["server JSON (decode + parse + validateEvent)"] / results["server binary, bodies as bytes"]).toFixed(1)}x less CPU (sink ${sink > 0 ? "ok" : "?"})`,
);
