/**
 * Publishing throughput: the CLI's publisher -> JoinPublisher -> WebSocket -> the server's validation
 * and counting -> a sink that only counts, all in this process on loopback (binary event batches). Baseline:
 * the same events serialised to JSON without sending them. The server's side alone is measured with pre-encoded
 * messages of 500 events, JSON and binary batches side by side.
 * Run: bun bench/capture/publish-bench.ts [events, default 200000; --smoke: 2000]
 */
import { createPublisher } from "~/agent/publish.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { sampleEvent, startServer } from "../../tests/support/publish-server.ts";
import { isSmoke, positional } from "../options.ts";

const total = Number(positional[0] ?? (isSmoke ? 2000 : 200_000));
const server = await startServer();
const events = Array.from({ length: 1000 }, (_, i) => sampleEvent({ http_req_path: `/users/${i}?page=${i % 7}` }));
const bytesPerEvent = Buffer.byteLength(JSON.stringify(events[0]));

let started = performance.now();
let sink = 0;
for (let i = 0; i < total; i++) sink += JSON.stringify(events[i % events.length]).length;
const baselineMs = performance.now() - started;

const { namespaceId, token } = await server.namespaceWithToken();
const publisher = createPublisher({ endpoint: server.endpoint, token, maxQueue: 20_000 });
await publisher.join();
started = performance.now();
let sent = 0;
// Offer events as fast as the queue takes them, yielding so the socket can drain.
while (sent < total) {
  const room = 20_000 - publisher.stats().queued;
  for (let i = 0; i < room && sent < total; i++, sent++) publisher.send(events[sent % events.length]!);
  await new Promise((r) => setImmediate(r));
}
const result = await publisher.close(60_000);
const publishMs = performance.now() - started;
const accepted = server.ingest.countsFor({ namespaceId, linkId: null }).accepted;

// The server's side alone: pre-encoded messages of 500 events on a raw socket, as fast as acks return.
const joined = (await (
  await fetch(`${server.endpoint}/api/JoinPublisher`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: "{}",
  })
).json()) as { websocketUrl: string };
const raw = new WebSocket(joined.websocketUrl);
await new Promise((r) => (raw.onopen = r));
const messages = Math.ceil(total / 500);
async function serverOnly(message: Uint8Array): Promise<number> {
  let acked = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    raw.onmessage = (e) => {
      if (JSON.parse(String(e.data)).type === "ack" && ++acked === messages) resolve();
    };
    for (let i = 0; i < messages; i++) raw.send(message);
  });
  return performance.now() - started;
}
const batch = events.slice(0, 500);
const jsonServerMs = await serverOnly(new TextEncoder().encode(JSON.stringify({ type: "events", seq: 1, events: batch })));
const binaryServerMs = await serverOnly(encodeEventBatch(1, batch));
raw.close();
await server.stop();

const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString("en");
console.log(`${total} events of ~${bytesPerEvent} B JSON each (sink ${sink > 0 ? "ok" : "?"})`);
console.log(`  baseline (JSON.stringify only): ${baselineMs.toFixed(0)} ms, ${rate(total, baselineMs)} events/s`);
console.log(
  `  publish -> server ack:          ${publishMs.toFixed(0)} ms, ${rate(total, publishMs)} events/s, ${((total * bytesPerEvent) / 1e6 / (publishMs / 1000)).toFixed(0)} MB/s`,
);
console.log(`  accepted ${accepted}, sent ${result.sent}, dropped ${result.dropped}, refused ${result.refused}`);
console.log(
  `  server side only (pre-encoded batches of 500), JSON:   ${jsonServerMs.toFixed(0)} ms, ${rate(messages * 500, jsonServerMs)} events/s`,
);
console.log(
  `  server side only (pre-encoded batches of 500), binary: ${binaryServerMs.toFixed(0)} ms, ${rate(messages * 500, binaryServerMs)} events/s`,
);
