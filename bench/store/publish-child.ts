import { createPublisher } from "~/agent/publish.ts";
import { generateEvents } from "../../tests/store/generate.ts";

/**
 * A capture CLI stand-in in its own process: generates realistic events and sends them through the
 * real publisher (JoinPublisher + WebSocket). Args: endpoint token count startMicros endMicros seed.
 */
const [endpoint, token, countArg, startArg, endArg, seedArg] = process.argv.slice(2);
const count = Number(countArg);
const start = Number(startArg);
const end = Number(endArg);
const chunk = 20_000;
const publisher = createPublisher({
  endpoint: String(endpoint),
  token,
  maxQueue: 50_000,
  batchMaxEvents: 1000,
});
await publisher.join();
const began = performance.now();
for (let i = 0; i < count; i += chunk) {
  const n = Math.min(chunk, count - i);
  const from = start + Math.floor(((end - start) * i) / count);
  const to = start + Math.floor(((end - start) * (i + n)) / count);
  const events = generateEvents({ count: n, startMicros: from, endMicros: to, seed: Number(seedArg) + i });
  for (const e of events) {
    while (publisher.stats().queued >= 40_000) await Bun.sleep(1);
    publisher.send(e);
  }
}
const stats = await publisher.close(120_000);
process.stdout.write(`${JSON.stringify({ ...stats, seconds: (performance.now() - began) / 1000 })}\n`);
