import { randomUUID } from "node:crypto";
import { createPublisher } from "~/agent/publish.ts";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { generateEvents } from "../../tests/store/generate.ts";

/**
 * A capture CLI stand-in in its own process, sending `count` events through the real publisher (JoinPublisher
 * + WebSocket, binary event batches). Generating realistic events costs more CPU than publishing them, so a pool
 * of up to 50,000 distinct events (bodies as bytes, as the tracer hands them over) is generated first; then this
 * prints {"publishing":true} and publishes `count` events cycling the pool, each a shallow copy with a fresh
 * event_id and a time spread over [startMicros, endMicros). The parent times from that line: the figure measures
 * publishing (copy, queue, encode, send) and the server, not the generator.
 * With a rate (events per second, 0 = as fast as the publisher takes them) the events are offered at that pace,
 * in steps of 1,000: a sustained load instead of a burst that overruns the store.
 * Args: endpoint token count startMicros endMicros seed [rate]. Last line: the publisher's stats as JSON.
 */
const [endpoint, token, countArg, startArg, endArg, seedArg, rateArg] = process.argv.slice(2);
const rate = Number(rateArg ?? 0);
const count = Number(countArg);
const start = Number(startArg);
const end = Number(endArg);
const pool: CapturedEvent[] = generateEvents({
  count: Math.min(count, 50_000),
  startMicros: start,
  endMicros: end,
  seed: Number(seedArg),
}).map((e) => ({ ...e, http_req_body: Buffer.from(e.http_req_body, "base64"), http_resp_body: Buffer.from(e.http_resp_body, "base64") }));
const publisher = createPublisher({
  endpoint: String(endpoint),
  token,
  maxQueue: 50_000,
  batchMaxEvents: 1000,
});
await publisher.join();
process.stdout.write(`${JSON.stringify({ publishing: true })}\n`);
const began = performance.now();
for (let i = 0; i < count; i++) {
  if (i % 1000 === 0) {
    while (publisher.stats().queued >= 40_000) await Bun.sleep(1);
    if (rate > 0) {
      const due = began + (i / rate) * 1000;
      if (performance.now() < due) await Bun.sleep(due - performance.now());
    }
  }
  const time = start + Math.floor(((end - start) * i) / count);
  publisher.send({ ...pool[i % pool.length]!, event_id: randomUUID(), time });
}
const stats = await publisher.close(120_000);
process.stdout.write(`${JSON.stringify({ ...stats, seconds: (performance.now() - began) / 1000 })}\n`);
